"""localfin package."""
