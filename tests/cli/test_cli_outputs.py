"""What the commands write and say: `pairs screen --json` prints the screen as one JSON document
and `--out FILE` writes it; an import of a close-only price file warns at once that the screen
reads adj_close (and says how to go on), an import with adj_close does not; `pairs demo --help`
quotes the packaged demo config's own seeds, exposures and baselines."""

from __future__ import annotations

import json
import sys
import tomllib
from importlib import resources
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "agent" / "pairs"))  # moira_support

from moira_support import small_store  # noqa: E402


def test_pairs_screen_prints_json_and_writes_it(cli, tmp_path: Path) -> None:
    out = tmp_path / "screens" / "2015-03-02.json"
    run = cli("pairs", "screen", "--date", "2015-03-02", "--store", small_store(), "--lookback", "500",
              "--top", "3", "--json", "--out", out, "--all")  # fmt: skip
    assert run.code == 0, run.err
    doc = json.loads(run.out)
    assert doc == json.loads(out.read_text(encoding="utf-8"))
    assert doc["date"] == "2015-03-02" and doc["price_field"] == "adj_close"
    assert [c["rank"] for c in doc["candidates"]] == [1, 2, 3]
    assert doc["pairs"] == doc["ranked"] + doc["excluded"] == len(doc["candidates"]) + len(doc["others"])
    pvalues = [c["pvalue"] for c in doc["candidates"]]
    assert pvalues == sorted(pvalues)
    # the tables, as before, without --json; --out alone writes the file and prints the tables
    table = cli("pairs", "screen", "--date", "2015-03-02", "--store", small_store(), "--lookback", "500")
    assert table.code == 0 and "top 5 candidates" in table.out


def test_a_close_only_price_file_warns_at_import(cli, tmp_path: Path) -> None:
    prices = pd.DataFrame(
        {
            "date": [d.strftime("%Y-%m-%d") for d in pd.bdate_range("2020-01-01", periods=30)] * 2,
            "ticker": ["AAA"] * 30 + ["BBB"] * 30,
            "close": [10.0 + 0.1 * k for k in range(30)] * 2,
        }
    )
    close_only = tmp_path / "close.csv"
    prices.to_csv(close_only, index=False)
    run = cli("data", "import", "--prices", close_only, "--store", tmp_path / "c.sqlite")
    assert run.code == 0, run.err
    warning = [x for x in run.err.splitlines() if x.startswith("warning: ")]
    assert len(warning) == 1, run.err
    assert "price rows without adj_close" in warning[0] and "AAA 30 of 30" in warning[0]
    assert "--price-field close" in warning[0] and 'price_field = "close"' in warning[0]
    adjusted = tmp_path / "adj.csv"
    prices.assign(adj_close=prices["close"]).to_csv(adjusted, index=False)
    clean = cli("data", "import", "--prices", adjusted, "--store", tmp_path / "a.sqlite")
    assert clean.code == 0 and "warning:" not in clean.err


def test_pairs_demo_help_quotes_the_demo_config(cli) -> None:
    doc = tomllib.loads(resources.files("agent.pairs").joinpath("configs", "demo.toml").read_text("utf-8"))
    seeds, exposures = doc["experiment"]["seeds"], doc["experiment"]["exposures"]
    methods = doc["baselines"]["methods"]
    run = cli("pairs", "demo", "--help")
    text = " ".join(run.out.replace("│", " ").split())
    assert f"{len(seeds)} seed{'' if len(seeds) == 1 else 's'} x {len(exposures)} exposures" in text
    assert f"({', '.join(exposures)})" in text and f"{len(methods)} baselines" in text
    assert f"at most {doc['policy']['max_cycles']} replay cycles" in text
