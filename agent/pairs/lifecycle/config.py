"""Every threshold of lifecycle monitoring, as one frozen config.

Units: windows and counts are trading sessions of the pair's calendar; p-values, shares and
correlations are fractions; the half-life is in sessions; z in standard deviations of the
spread. Defaults were calibrated on the synthetic market (five planted pairs, two planted
breaks) and on the screen's top pairs of the real staples/energy pool (2013-2022): on healthy
synthetic pairs at most ~5 % of sessions breach two factors and < 1 % breach three, while the
planted restatement break breaches three or more factors on most sessions after it (the
acquisition break is statistically mild and is meant to be caught by the news path). Real
pairs breach the recent-window tests far more often (their cointegration is weak over one
or two years); the per-session counts and the cycle shares below are what keeps a single
noisy factor from replacing a pair.
"""

from __future__ import annotations

from dataclasses import dataclass

from localfin.errors import ConfigError

__all__ = ["LEVELS", "HEALTHY", "WARNING", "BREAK", "LifecycleConfig", "DEFAULT_NEWS_KEYWORDS", "level_max"]

HEALTHY, WARNING, BREAK = "HEALTHY", "WARNING", "BREAK"
#: Lifecycle levels, mildest first (index = severity).
LEVELS = (HEALTHY, WARNING, BREAK)


def level_max(*levels: str) -> str:
    """The most severe of ``levels`` (HEALTHY when none)."""
    return max(levels, key=LEVELS.index, default=HEALTHY)


#: (category, phrase) pairs of the structural-event keyword matcher. Phrases match whole words,
#: case-insensitively, a space also matching a hyphen; inflections are listed explicitly (a
#: plural such as "acquisitions" is left out on purpose: it describes activity, not an event).
DEFAULT_NEWS_KEYWORDS: tuple[tuple[str, str], ...] = (
    ("acquisition", "acquisition"),
    ("acquisition", "acquired by"),
    ("acquisition", "be acquired"),
    ("acquisition", "was acquired"),
    ("acquisition", "to acquire"),
    ("acquisition", "acquires"),
    ("acquisition", "acquiring"),
    ("acquisition", "buyout"),
    ("acquisition", "takeover"),
    ("acquisition", "tender offer"),
    ("merger", "merger"),
    ("merger", "merge"),
    ("merger", "merges"),
    ("merger", "merged"),
    ("merger", "merging"),
    ("take_private", "taken private"),
    ("take_private", "take private"),
    ("take_private", "go private"),
    ("take_private", "going private"),
    ("bankruptcy", "bankruptcy"),
    ("bankruptcy", "bankrupt"),
    ("bankruptcy", "chapter 11"),
    ("bankruptcy", "insolvency"),
    ("bankruptcy", "insolvent"),
    ("bankruptcy", "receivership"),
    ("bankruptcy", "liquidation"),
    ("going_concern", "going concern"),
    ("delisting", "delisting"),
    ("delisting", "delisted"),
    ("delisting", "delist"),
    ("trading_halt", "trading halt"),
    ("trading_halt", "halted trading"),
    ("trading_halt", "trading halted"),
    ("trading_halt", "trading suspended"),
    ("trading_halt", "suspended trading"),
    ("trading_halt", "halts trading"),
    ("fraud", "fraud"),
    ("fraud", "fraudulent"),
    ("fraud", "accounting scandal"),
    ("fraud", "accounting irregularities"),
    ("restatement", "restatement"),
    ("restatement", "restate"),
    ("restatement", "restates"),
    ("restatement", "restated"),
    ("restatement", "material weakness"),
)


@dataclass(frozen=True)
class LifecycleConfig:
    """Lifecycle thresholds (paper §3.2.3).

    Statistical factors, computed at session t from data up to t only (a factor is *breached*
    when its value leaves the allowed range; a factor without enough complete sessions is
    *unavailable* and never breached):

    corr_window, corr_min: Pearson correlation of the legs' daily log returns over the last
        ``corr_window`` returns; breached below ``corr_min``.
    half_life_window, half_life_min, half_life_max: half-life (sessions) of the spread
        log A - alpha - beta log B (screen alpha/beta) over the last ``half_life_window``
        sessions; breached outside [min, max] and when the spread does not revert (inf).
    adf_window, adf_pvalue_max: ADF (constant, lag by AIC) p-value of that spread over the
        last ``adf_window`` sessions; breached above the maximum.
    coint_window, coint_pvalue_max: Engle-Granger p-value with the hedge ratio re-estimated
        over the last ``coint_window`` sessions; breached above the maximum.
    z_window, z_abs_max: z of today's spread against the last ``z_window`` sessions;
        breached when |z| exceeds the maximum.
    vol_recent_window, vol_reference_window, vol_ratio_max: standard deviation of the last
        ``vol_recent_window`` spread changes over that of the last ``vol_reference_window``
        changes (the screening horizon, shortened to the history there is); breached above
        the maximum.
    min_obs_fraction: a factor needs complete sessions for at least this share of its window
        (and the kernel's minimum), else it is unavailable.

    Levels and validation:

    warning_factors, break_factors: a session is WARNING with at least ``warning_factors``
        breached factors and BREAK with at least ``break_factors``.
    validation_period: sessions of a cycle; a boundary comes after this many held sessions.
    break_share: at a boundary the cycle's statistics say BREAK when at least this share of
        its sessions were BREAK sessions.
    warning_share: ... and WARNING when at least this share were WARNING-or-worse sessions.

    News:

    news_window: sessions of past news the boundary assessment reads (and for which a
        non-critical but relevant verified event keeps the news level at WARNING).
    news_keywords: (category, phrase) pairs of the keyword matcher.
    negation_cues, negation_span: a keyword preceded within ``negation_span`` words of its
        own clause by one of these is negated ("denies merger talks") and not a candidate.
    immaterial_cues: a keyword whose sentence holds one of these is immaterial
        ("small bolt-on acquisition").
    generic_cues: a keyword with one of these right before or after it is about an industry,
        not a company ("industry merger activity").
    routine_phrases: regular expressions of boilerplate that contains a keyword but reports
        no event ("acquires 8,800 shares", "fraud detection").
    break_severities: a verification with affects_pair_relationship true and one of these
        severities is a *verified critical event* (BREAK).
    warning_severities: ... with one of these it is a news WARNING for ``news_window`` sessions.
    news_summary_max_items, news_summary_max_chars: bounds of the masked past-week summary
        sent to the model when the prompt has no news budget (``[prompt] news_token_budget`` 0,
        the compact CPU size). With a budget the summary holds whole items, newest first,
        within it.
    item_max_chars: most characters of each item's text in the compact summary and of the
        matched sentence of a candidate event (no news budget only).
    """

    corr_window: int = 60
    corr_min: float = 0.3
    half_life_window: int = 250
    half_life_min: float = 0.5
    half_life_max: float = 120.0
    adf_window: int = 250
    adf_pvalue_max: float = 0.5
    coint_window: int = 500
    coint_pvalue_max: float = 0.5
    z_window: int = 250
    z_abs_max: float = 3.0
    vol_recent_window: int = 20
    vol_reference_window: int = 2520
    vol_ratio_max: float = 2.0
    min_obs_fraction: float = 0.5
    warning_factors: int = 2
    break_factors: int = 3
    validation_period: int = 23
    break_share: float = 0.3
    warning_share: float = 0.3
    news_window: int = 7
    news_keywords: tuple[tuple[str, str], ...] = DEFAULT_NEWS_KEYWORDS
    negation_cues: tuple[str, ...] = (
        "not",
        "no",
        "never",
        "deny",
        "denies",
        "denied",
        "rules out",
        "ruled out",
        "rejects",
        "rejected",
        "dismisses",
        "dismissed",
        "refutes",
        "unfounded",
        "without",
    )
    negation_span: int = 8
    immaterial_cues: tuple[str, ...] = ("small", "bolt-on", "tuck-in", "immaterial", "minor")
    generic_cues: tuple[str, ...] = (
        "industry",
        "sector",
        "industry-wide",
        "sector-wide",
        "market-wide",
        "activity",
        "wave",
        "boom",
        "trend",
        "climate",
        "environment",
        "speculation",
        "rumors",
        "rumours",
    )
    routine_phrases: tuple[str, ...] = (
        r"acquires?\s+[\d,.]+\s+(?:\w+\s+)?shares",
        r"purchased\s+or\s+(?:otherwise\s+)?acquired",
        r"fraud\s+(?:detection|prevention|protection|tools?|solutions?)",
        r"(?:anti|counter)-fraud",
    )
    break_severities: tuple[str, ...] = ("HIGH", "CRITICAL")
    warning_severities: tuple[str, ...] = ("MEDIUM",)
    news_summary_max_items: int = 12
    news_summary_max_chars: int = 1500
    item_max_chars: int = 200

    def __post_init__(self) -> None:
        windows = {
            "corr_window": (self.corr_window, 3),
            "half_life_window": (self.half_life_window, 3),
            "adf_window": (self.adf_window, 30),
            "coint_window": (self.coint_window, 30),
            "z_window": (self.z_window, 3),
            "vol_recent_window": (self.vol_recent_window, 2),
            "validation_period": (self.validation_period, 1),
            "news_window": (self.news_window, 1),
            "negation_span": (self.negation_span, 1),
            "news_summary_max_items": (self.news_summary_max_items, 1),
            "news_summary_max_chars": (self.news_summary_max_chars, 80),
            "item_max_chars": (self.item_max_chars, 40),
        }
        for name, (value, low) in windows.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ConfigError(f"LifecycleConfig.{name}={value!r}; allowed: an int >= {low}")
        if (
            not isinstance(self.vol_reference_window, int)
            or self.vol_reference_window <= self.vol_recent_window
        ):
            raise ConfigError(
                f"LifecycleConfig.vol_reference_window={self.vol_reference_window!r}; allowed: an int > "
                f"vol_recent_window={self.vol_recent_window}"
            )
        if not -1.0 <= self.corr_min < 1.0:
            raise ConfigError(f"LifecycleConfig.corr_min={self.corr_min}; allowed: [-1, 1)")
        if not 0.0 <= self.half_life_min < self.half_life_max:
            raise ConfigError(
                f"LifecycleConfig half-life band [{self.half_life_min}, {self.half_life_max}]; allowed: "
                "0 <= half_life_min < half_life_max (sessions)"
            )
        for name in ("adf_pvalue_max", "coint_pvalue_max"):
            if not 0.0 < getattr(self, name) <= 1.0:
                raise ConfigError(f"LifecycleConfig.{name}={getattr(self, name)}; allowed: (0, 1]")
        if not self.z_abs_max > 0.0:
            raise ConfigError(f"LifecycleConfig.z_abs_max={self.z_abs_max}; allowed: > 0")
        if not self.vol_ratio_max > 1.0:
            raise ConfigError(f"LifecycleConfig.vol_ratio_max={self.vol_ratio_max}; allowed: > 1")
        if not 0.0 < self.min_obs_fraction <= 1.0:
            raise ConfigError(f"LifecycleConfig.min_obs_fraction={self.min_obs_fraction}; allowed: (0, 1]")
        if not 1 <= self.warning_factors <= self.break_factors <= 6:
            raise ConfigError(
                f"LifecycleConfig warning_factors={self.warning_factors}, "
                f"break_factors={self.break_factors}; "
                "allowed: 1 <= warning_factors <= break_factors <= 6 (there are six factors)"
            )
        for name in ("break_share", "warning_share"):
            if not 0.0 < getattr(self, name) <= 1.0:
                raise ConfigError(f"LifecycleConfig.{name}={getattr(self, name)}; allowed: (0, 1]")
        if not self.news_keywords or not all(
            isinstance(k, tuple) and len(k) == 2 and all(isinstance(x, str) and x.strip() for x in k)
            for k in self.news_keywords
        ):
            raise ConfigError(
                "LifecycleConfig.news_keywords must be a non-empty tuple of (category, phrase) string pairs"
            )
        severities = ("LOW", "MEDIUM", "HIGH", "CRITICAL")
        for name in ("break_severities", "warning_severities"):
            bad = [s for s in getattr(self, name) if s not in severities]
            if bad:
                raise ConfigError(f"LifecycleConfig.{name} holds {bad}; allowed: {', '.join(severities)}")
        if set(self.break_severities) & set(self.warning_severities):
            raise ConfigError("LifecycleConfig.break_severities and warning_severities must not overlap")
