"""Every command and Python block of the README and the documentation, run as written: each page
in a folder of its own (the repository's ``agent/``, ``examples/`` and ``.venv`` linked in, a copy
of ``docs/``, the page's own files written from its named blocks), its commands in order through
bash with localfin's virtual environment first on ``PATH`` and nothing outside the folder written.

The data is the demo's: ``DATA/`` holds the synthetic market (``localfin data synth``) as a long
price history, a news file, a companies file and a Herculean-layout folder, beside the released
price and news files where the shared data folder has them (a command that names an absent one
skips, saying which). A page that runs ``localfin demo`` runs it; a page that only reads a demo
folder gets a copy of the session's (``demo_dir``, run once).

Which commands run where (:mod:`docs_examples`): cheap ones in the default suite; those that
start an engine or run for minutes (the demo, an experiment, a sweep, the rehearsal, a
benchmark, a page's ``pytest`` commands) are marked ``slow``; those that need a GPU skip with the
reason, as do ``make`` targets (they install the environment the suite runs in, or run the suite)
and the few commands of a plugin or file the page describes without giving it. A ``pip
install`` installs into a throwaway folder put on ``PYTHONPATH``, never into the environment.
Each test runs the examples of its page before it that it needs, so any one of them can run
alone.
"""

from __future__ import annotations

import os
import py_compile
import re
import shlex
import shutil
import signal
import subprocess
import time
import tomllib
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from docs_examples import (
    ROOT,
    TIMEOUT_S,
    Example,
    base_env,
    classify,
    examples,
    expected_code,
    page_files,
    run_group,
    strip_comment,
)

EXAMPLES = examples()


def _params() -> list[object]:
    out = []
    for ex in EXAMPLES:
        tier, reason = classify(ex)
        # a slow example may run the demo first (the session's, in its setup): beyond the suite's limit
        marks = [pytest.mark.slow, pytest.mark.timeout(2 * TIMEOUT_S["slow"])] if tier == "slow" else []
        out.append(pytest.param(ex, tier, reason, id=ex.id, marks=marks))
    return out


# -- the data: the demo's synthetic market, in every layout a page imports ----------------------


def _herculean(prices, news, dest: Path) -> None:
    """The synthetic market's last 300 sessions in the Herculean layout (data/prices.parquet,
    news.parquet with one highlights text per ticker and day, filings.parquet)."""
    import pandas as pd

    base = dest / "data"
    base.mkdir(parents=True)
    days = sorted(prices["date"].unique())[-300:]
    recent = prices[prices["date"].isin(days)].rename(columns={"ticker": "symbol"})
    recent = recent[["symbol", "date", "open", "high", "low", "close", "adj_close", "volume"]]
    recent.insert(0, "id", range(1, len(recent) + 1))
    recent.assign(date=pd.to_datetime(recent["date"])).to_parquet(base / "prices.parquet", index=False)
    hl = news[news["date"].isin(days)].groupby(["ticker", "date"])["headline"].apply(" ".join).reset_index()
    hl = hl.rename(columns={"ticker": "symbol", "headline": "highlights"})
    hl.insert(0, "id", range(1, len(hl) + 1))
    hl.assign(date=pd.to_datetime(hl["date"])).to_parquet(base / "news.parquet", index=False)
    tickers = sorted(recent["symbol"].unique())
    filings = pd.DataFrame(
        {
            "id": range(1, len(tickers) + 1),
            "symbol": tickers,
            "date": pd.Timestamp(days[0]),
            "document_type": "10-K",
            "mda_content": [f"{t} annual report: revenue and margins." for t in tickers],
            "risk_content": [f"{t} risk factors: competition and regulation." for t in tickers],
        }
    )
    filings.to_parquet(base / "filings.parquet", index=False)


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory) -> Path:
    """``DATA/`` of the pages (module doc)."""
    import pandas as pd

    from agent.data.synthetic import SyntheticConfig, generate_market, write_market

    root = tmp_path_factory.mktemp("DATA")
    files = write_market(generate_market(SyntheticConfig()), root / "synthetic")
    prices = pd.read_csv(files["prices"], dtype={"date": str})
    news = pd.read_json(files["news"], lines=True, dtype={"date": str}, convert_dates=False)
    _herculean(prices, news, root / "herculean")
    recent = sorted(prices["date"].unique())[-300]
    (root / "prices").mkdir()
    prices[prices["date"] < recent].to_csv(root / "prices" / "long_history.csv", index=False)
    (root / "news").mkdir()
    news[["date", "ticker", "headline"]].to_csv(root / "news" / "headlines.csv", index=False)
    shutil.copy(files["companies"], root / "companies.csv")
    shared = Path(os.environ.get("LOCALFIN_SHARED_DATA", ROOT.parent / "shared" / "data"))
    released = (
        "prices/staples_energy_daily_2003_2023.csv",
        "prices/tech_daily_2003_2023.csv",
        "prices/bigtech_adjclose_2015_2025.csv",
        "news/tradingview_bigtech_2025-04_05.csv",
    )
    for name in released:
        if (shared / name).is_file():
            (root / name).symlink_to(shared / name)
    return root


# -- a page's folder ----------------------------------------------------------------------------


class Page:
    """One page's folder: its environment, the shell state its commands set, what ran, and the
    servers it started in the background."""

    def __init__(self, page: str, folder: Path, data: Path) -> None:
        self.page, self.folder = page, folder
        self.env = base_env(folder)
        self.prelude: list[str] = []
        self.done: set[int] = set()
        self.background: list[subprocess.Popen[bytes]] = []
        # a clone: the repository's files (the docs copied: a page's command may write into them)
        for entry in ROOT.iterdir():
            if entry.name not in ("docs", "runs", "reports", "site", ".git") and not entry.name.startswith(
                (".pytest", ".ruff", ".cache")
            ):
                (folder / entry.name).symlink_to(entry)
        shutil.copytree(ROOT / "docs", folder / "docs")
        (folder / "DATA").symlink_to(data)
        (folder / "models").mkdir()
        for name, src in (("PRICES.csv", "prices/long_history.csv"), ("NEWS.csv", "news/headlines.csv"),
                          ("companies.csv", "companies.csv")):  # fmt: skip
            shutil.copy(data / src, folder / name)
        for f in page_files(page):
            path = folder / f.path
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f.text.split("\n", 1)[1] if "\n" in f.text else "", encoding="utf-8")

    def close(self) -> None:
        for proc in self.background:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()

    def script(self, command: str) -> str:
        return "\n".join(["set -e", *self.prelude, command])


class _Pages:
    """The pages' folders, each made on first use."""

    def __init__(self, root, data: Path) -> None:
        self.root, self.data, self.opened = root, data, {}

    def __getitem__(self, page: str) -> Page:
        if page not in self.opened:
            self.opened[page] = Page(page, self.root.mktemp(re.sub(r"\W+", "-", page)), self.data)
        return self.opened[page]


@pytest.fixture(scope="session")
def pages(tmp_path_factory, data_dir) -> Iterator[_Pages]:
    found = _Pages(tmp_path_factory, data_dir)
    yield found
    for p in found.opened.values():
        p.close()


# -- running one example --------------------------------------------------------------------------


def _pip_install(command: str, page: Page) -> str:
    """``pip install ... DIR`` as a throwaway install: copies of the folders into a site folder
    put on the page's ``PYTHONPATH`` (``--target``; ``--no-deps``: localfin is there already)."""
    site = page.folder / ".site"
    args = shlex.split(strip_comment(command))[2:]
    paths = []
    for a in (x for x in args if not x.startswith("-")):
        copy = page.folder / ".build" / Path(a).name
        shutil.copytree(page.folder / a, copy, dirs_exist_ok=True)
        paths.append(str(copy))
    flags = [x for x in args if x.startswith("-") and x != "-e"]
    page.env["PYTHONPATH"] = f"{site}{os.pathsep}{page.env['PYTHONPATH']}"
    return shlex.join(["python", "-m", "pip", "install", "--target", str(site), "--no-deps",
                       "--disable-pip-version-check", "--no-cache-dir", *flags, *paths])  # fmt: skip


def _needs_absent_data(ex: Example, page: Page) -> str:
    for path in re.findall(r"DATA/[\w./-]+", ex.text):
        if not (page.folder / path).exists():
            return f"needs the released file {path}, absent here"
    return ""


def _wait_ready(proc: subprocess.Popen[bytes], command: str, log: Path) -> None:
    """Until the server the command started answers on its ``--port`` (or it exits)."""
    port = re.search(r"--port[ =](\d+)", command)
    if not port:
        return
    url = f"http://127.0.0.1:{port.group(1)}/v1/models"
    deadline = time.monotonic() + TIMEOUT_S["slow"]
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the server stopped: {log.read_text(errors='replace')[-3000:]}"
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(1)
    raise AssertionError(f"the server did not answer at {url}")


def _run(ex: Example, tier: str, page: Page) -> None:
    folder, timeout = page.folder, TIMEOUT_S[tier]
    if ex.kind == "file":
        path = folder / ex.path
        assert path.is_file()
        if path.suffix == ".py":
            py_compile.compile(str(path), doraise=True)
        else:
            tomllib.loads(path.read_text(encoding="utf-8"))
        return
    if ex.kind == "py":
        script = folder / f"_example_{ex.line}.py"
        script.write_text(ex.text, encoding="utf-8")
        command = f"python {script.name}"
    else:
        command = strip_comment(ex.text)
        if re.match(r"(\S+/)?pip install\b", command):
            command = _pip_install(command, page)
    if ex.kind == "bg":
        log = folder / f"_background_{ex.line}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                ["bash", "-c", page.script(command.rstrip("&").rstrip())],
                cwd=folder,
                env=page.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        page.background.append(proc)
        _wait_ready(proc, command, log)
        return
    proc = run_group(["bash", "-c", page.script(command)], cwd=folder, env=page.env, timeout=timeout)
    want = expected_code(ex)
    assert proc.returncode == want, (
        f"{ex.id}: exit code {proc.returncode}, documented {want}\n"
        f"stdout: {proc.stdout[-3000:]}\nstderr: {proc.stderr[-3000:]}"
    )
    if ex.kind == "state":
        page.prelude.append(command)


def _prepare(ex: Example, tier: str, page: Page, request: pytest.FixtureRequest) -> None:
    """Run the examples of the page before ``ex`` that have not run (module doc)."""
    for k, earlier in enumerate(EXAMPLES):
        if earlier.page != ex.page or k in page.done:
            continue
        if earlier is ex:
            return
        t, _ = classify(earlier)
        if (t == "run" or (t == "slow" and tier == "slow")) and not _needs_absent_data(earlier, page):
            _once(k, earlier, t, page, request)


def _runs_the_demo(page: str) -> bool:
    return any(re.search(r"localfin demo\b", e.text) for e in EXAMPLES if e.page == page)


def _once(k: int, ex: Example, tier: str, page: Page, request: pytest.FixtureRequest) -> None:
    # a page that reads the demo without running it gets a copy of the session's (a page that
    # runs it runs it: a demo folder replays only where it was made, its config names its store)
    where = re.search(r"\b(runs|reports)/demo\b", ex.text)
    if tier == "slow" and where and not _runs_the_demo(ex.page) and not (page.folder / where[0]).exists():
        shutil.copytree(request.getfixturevalue("demo_dir"), page.folder / where[0], symlinks=True)
    page.done.add(k)
    _run(ex, tier, page)


@pytest.mark.parametrize(("ex", "tier", "reason"), _params())
def test_the_documented_example_runs(ex: Example, tier: str, reason: str, pages, request) -> None:
    if tier in ("gpu", "skip"):
        pytest.skip(reason)
    page = pages[ex.page]
    absent = _needs_absent_data(ex, page)
    if absent:
        pytest.skip(absent)
    _prepare(ex, tier, page, request)
    _once(EXAMPLES.index(ex), ex, tier, page, request)


def test_every_block_is_found_and_every_skip_says_why() -> None:
    """The extraction sees every bash and python block of the pages, and every example it does
    not run carries its reason."""
    fences = 0
    for page in {e.page for e in EXAMPLES}:
        fences += len(re.findall(r"^ *```(?:bash|python)$", (ROOT / page).read_text(encoding="utf-8"), re.M))
    blocks = {(e.page, e.line) for e in EXAMPLES if e.kind in ("py", "file")}
    assert len(EXAMPLES) > 150 and fences >= 60 and len(blocks) >= 10
    for ex in EXAMPLES:
        tier, reason = classify(ex)
        assert tier in ("run", "slow", "gpu", "skip"), ex.id
        assert (tier in ("gpu", "skip")) == bool(reason) or tier == "slow", ex.id
