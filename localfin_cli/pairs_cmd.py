"""`localfin pairs ...`: the causal pair screen, Moira experiments and the Moira demo."""

from __future__ import annotations

from pathlib import Path

import typer

from localfin_cli import pairs_screen_cmd
from localfin_cli._common import progress_for, quiet_run, result
from localfin_cli.pairs_options import baseline_configs, check_years, parse_pools, parse_years

__all__ = ["app"]

app = typer.Typer(help="Pair trading (Moira): screen, run experiments, demo.", no_args_is_help=True)
pairs_screen_cmd.register(app)


@app.command("screen-eval")
def screen_eval(
    ctx: typer.Context,
    truth: Path = typer.Option(..., "--truth", help="truth.json written by `localfin data synth`."),
    store: Path | None = typer.Option(None, "--store", help="Store holding that synthetic market."),
    dates: int = typer.Option(50, "--dates", help="Evenly spaced selection dates."),
    first_session: int = typer.Option(504, "--first-session", help="Index of the first selection session."),
) -> None:
    """Precision@k of the screen against the synthetic market's planted pairs (JSON line)."""
    import json

    from agent.pairs.screen.evaluate import evaluate_screen_files
    from localfin import env

    with quiet_run(ctx, "pairs-screen-eval", announce=False) as rl:
        ev = evaluate_screen_files(
            store or env.default_store_path(),
            truth,
            n_dates=dates,
            first_session=first_session,
            progress=progress_for(rl),
        )
        result(
            rl,
            json.dumps(
                {
                    "dates": len(ev.scores),
                    "first": str(ev.scores[0].date),
                    "last": str(ev.scores[-1].date),
                    "k": ev.k,
                    "precision_planted": round(ev.precision_planted, 4),
                    "precision_active": round(ev.precision_active, 4),
                    "recall_active": round(ev.recall_active, 4),
                    "auc_active": round(ev.auc_active, 4),
                }
            ),
        )


@app.command("run")
def run(
    ctx: typer.Context,
    config: Path = typer.Option(..., "--config", help="Experiment TOML (see agent/pairs/configs/demo.toml)."),
    out: Path | None = typer.Option(
        None, "--out", help="Experiment folder (default: $LOCALFIN_RUNS_DIR/<experiment.name>)."
    ),
    resume: bool = typer.Option(False, "--resume", help="Continue an existing folder (replay)."),
    sequential: bool = typer.Option(
        False, "--sequential", help="Run the runs one after another instead of in lockstep (for comparison)."
    ),
    model: str | None = typer.Option(
        None,
        "--model",
        help="Registry key replacing the config's [model] backbone (its weights are checked before "
        "anything is written).",
    ),
    seed: list[int] = typer.Option(
        None, "--seed", help="A seed replacing [experiment] seeds; repeat for several (--seed 0 --seed 1)."
    ),
    limit: int | None = typer.Option(
        None,
        "--limit",
        help="Test only the first N sessions of the test window (a quick check; the folder's config.toml "
        "holds the shorter window).",
    ),
    check: bool = typer.Option(
        False,
        "--check",
        help="Only the pre-flight: the config, its models and their weights, the store, pool, windows "
        "and price column; nothing is written (exit 1 when a check fails).",
    ),
    dry_run: bool = typer.Option(
        False,
        "--dry-run",
        help="The pre-flight, then the folder, engines and runs it would start; run nothing.",
    ),
) -> None:
    """Run a Moira experiment: every seed x exposure x variant, in lockstep on one journaled engine
    (a second one for FinMem when `[baselines.finmem] model` fixes another backbone). The pre-flight
    (`--check`) runs first: a missing model, weights file, store, ticker or window stops the run
    before its folder is made."""
    from agent.api import load_experiment_config, models, run_experiment
    from agent.pairs.experiment.preflight import preflight, require
    from localfin import env, interrupt, runlock

    seeds = list(seed) if seed else None
    cfg, _ = load_experiment_config(config, model=model, seeds=seeds, limit=limit)
    checks = preflight(cfg, models())  # registry keys, weights, store, pool, windows, price column
    folder = out or env.runs_dir() / cfg.name
    if check or dry_run:
        from localfin_cli.pairs_plan import check_lines, plan_lines

        lines = plan_lines(cfg, folder, resume=resume) if dry_run else []
        result(None, "\n".join([*lines, *check_lines(checks)]))
        if not all(c.ok for c in checks):
            raise typer.Exit(1)
        return
    require(checks)  # before the folder, the engine or any call
    me = f"localfin pairs run --config {config}" + (f" --model {model}" if model else "")
    me += "".join(f" --seed {s}" for s in seeds or ()) + (f" --limit {limit}" if limit else "")
    hint = f"rerun with: {me} --out {folder} --resume"
    # one writer per folder (exit 3), a stop on SIGINT / SIGTERM at a call boundary (130 / 143)
    with runlock.hold(folder, me), interrupt.graceful(hint), quiet_run(ctx, "run", folder) as rl:
        res = run_experiment(
            config,
            folder,
            resume=resume,
            sequential=sequential,
            model=model,
            seeds=seeds,
            limit=limit,
            progress=progress_for(rl),
        )
        result(
            rl, (folder / "summary.md").read_text(encoding="utf-8") + f"\nexperiment folder: {res.out_dir}"
        )


def _demo_help() -> str:
    """`pairs demo`'s help, its figures read from the packaged demo config (so they cannot go stale)."""
    import tomllib
    from importlib import resources

    text = resources.files("agent.pairs").joinpath("configs", "demo.toml").read_text("utf-8")
    doc = tomllib.loads(text)
    exp, policy = doc["experiment"], doc.get("policy", {})
    seeds, exposures = exp.get("seeds", [0]), exp.get("exposures", [])
    methods = doc.get("baselines", {}).get("methods", [])
    return (
        "The Moira CPU demo (agent/pairs/configs/demo.toml): a synthetic market with a planted break, "
        f"{len(seeds)} seed{'' if len(seeds) == 1 else 's'} x {len(exposures)} exposures "
        f"({', '.join(exposures)}), at most {policy.get('max_cycles', 'n/a')} replay cycles, and "
        f"{len(methods)} baselines ({', '.join(methods)}), in lockstep on one engine."
    )


@app.command("demo", help=_demo_help())
def demo(
    ctx: typer.Context,
    out: Path | None = typer.Option(None, "--out", help="Demo folder (default: runs/moira-demo)."),
    model: str = typer.Option("smollm2-135m", "--model", help="Registry key of the backbone."),
    sequential: bool = typer.Option(False, "--sequential", help="Runs one after another."),
) -> None:
    from agent.pairs.experiment.demo import run_moira_demo
    from localfin import env

    folder = out or env.runs_dir() / "moira-demo"
    with quiet_run(ctx, "run", folder) as rl:
        res = run_moira_demo(folder, model, progress_for(rl), sequential=sequential)
        result(rl, res.report.read_text(encoding="utf-8") + f"\nreport: {res.report}")


@app.command("matrix")
def matrix(
    ctx: typer.Context,
    config: Path = typer.Option(
        ...,
        "--config",
        help="Matrix TOML (see agent/pairs/configs/matrix_cpu.toml, agent/pairs/experiment/matrix.py).",
    ),
    out: Path | None = typer.Option(
        None, "--out", help="Matrix folder (default: $LOCALFIN_RUNS_DIR/<matrix.name>)."
    ),
    resume: bool = typer.Option(False, "--resume", help="Continue an existing matrix folder (replay)."),
    ray: str | None = typer.Option(
        None,
        "--ray",
        help="Run the runs as Ray tasks on the cluster at this address: HOST:PORT of the head, auto, or "
        "local (start one here). See docs/cluster.md.",
    ),
    endpoint: list[str] = typer.Option(
        None,
        "--endpoint",
        help="With --ray: a server for a backbone, KEY=URL (repeat; a node's own LOCALFIN_ENDPOINTS "
        "comes first).",
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="List the engines, experiments and runs; run nothing."
    ),
) -> None:
    """Run an experiment matrix: backbones x windows x seeds x exposures x variants, one engine per
    backbone, every call journaled; a matrix summary per setting (median-return run, spread, Sharpe ± SE)."""
    from agent.pairs.experiment.matrix import run_matrix
    from agent.pairs.experiment.matrix_config import load_matrix
    from agent.pairs.experiment.plan import plan_matrix
    from agent.report.matrix_summary import write_matrix_summary
    from localfin import env, interrupt, runlock
    from serving.cluster.connect import check_address
    from serving.cluster.endpoints import Endpoints, parse_endpoints

    if ray is not None:
        ray = check_address(ray)
    named = Endpoints.of(parse_endpoints(endpoint or [], "--endpoint"))
    cfg = load_matrix(config)
    text = config.read_text(encoding="utf-8")
    folder = out or env.runs_dir() / cfg.name
    if dry_run:
        result(None, "\n".join(plan_matrix(cfg, folder).describe()))
        return
    hint = f"rerun with: localfin pairs matrix --config {config} --out {folder} --resume"
    me = f"localfin pairs matrix --config {config}"
    with runlock.hold(folder, me), interrupt.graceful(hint), quiet_run(ctx, "matrix", folder) as rl:
        res = run_matrix(
            cfg,
            folder,
            config_text=text,
            resume=resume,
            ray_address=ray,
            endpoints=named,
            summary=write_matrix_summary,
            progress=progress_for(rl),
        )
        result(rl, (folder / "summary.md").read_text(encoding="utf-8") + f"\nmatrix folder: {res.out_dir}")


@app.command("screen-sweep")
def screen_sweep(
    ctx: typer.Context,
    pool: list[str] = typer.Option(..., "--pool", help="NAME=T1,T2,... (repeat for several pools)."),
    years: str = typer.Option(..., "--years", help="Years of monthly selection dates, e.g. 2005-2023."),
    store: Path | None = typer.Option(
        None,
        "--store",
        help="SQLite market store (default: $LOCALFIN_STORE or $LOCALFIN_DATA_DIR/market.sqlite).",
    ),
    top: int = typer.Option(5, "--top", help="Candidates kept (top_k)."),
    lookback: int = typer.Option(2520, "--lookback", help="Sessions ending at each date."),
    price_field: str = typer.Option("adj_close", "--price-field", help="adj_close (default) or close."),
    out: Path | None = typer.Option(None, "--out", help="Also write the per-date counts here (JSON)."),
) -> None:
    """Candidates per monthly selection date (last session of each month) of each pool: min /
    median / max, the dates below --top, and every exclusion by reason (JSON lines)."""
    import json

    from agent.pairs.screen.causal import ScreenConfig
    from agent.pairs.screen.evaluate import sweep_store
    from localfin import env

    pools, span = parse_pools(pool), parse_years(years)
    cfg = ScreenConfig(top_k=top, lookback=lookback, min_sessions=min(252, lookback), price_field=price_field)
    path = store or env.default_store_path()
    check_years(path, pools, span)
    with quiet_run(ctx, "pairs-screen-sweep", announce=False) as rl:
        sweeps = sweep_store(path, pools, span, cfg, progress_for(rl))
        if out is not None:
            out.parent.mkdir(parents=True, exist_ok=True)
            per_date = {
                sw.name: [
                    {"date": str(c.date), "candidates": c.n_candidates, "excluded": dict(c.excluded)}
                    for c in sw.counts
                ]
                for sw in sweeps
            }
            out.write_text(json.dumps(per_date, indent=1) + "\n", encoding="utf-8")
        result(rl, "\n".join(json.dumps(sw.summary()) for sw in sweeps))


@app.command("lifecycle-sweep")
def lifecycle_sweep(
    ctx: typer.Context,
    pool: list[str] = typer.Option(..., "--pool", help="NAME=T1,T2,... (repeat for several pools)."),
    years: str = typer.Option(..., "--years", help="Years of monthly selection dates, e.g. 2005-2023."),
    store: Path | None = typer.Option(
        None,
        "--store",
        help="SQLite market store (default: $LOCALFIN_STORE or $LOCALFIN_DATA_DIR/market.sqlite).",
    ),
    top: int = typer.Option(5, "--top", help="Candidates of each date held (the selection call's choices)."),
    hold: int = typer.Option(75, "--hold", help="Sessions each pair is held (75: the paper's test window)."),
    vary: list[str] = typer.Option(
        [],
        "--vary",
        help="NAME=V1,V2,... a threshold and its values (repeatable; default: the built-in grid).",
    ),
    price_field: str = typer.Option("adj_close", "--price-field", help="adj_close (default) or close."),
    out: Path | None = typer.Option(None, "--out", help="Also write the rows here (JSON)."),
) -> None:
    """How often held pairs reach WARNING / BREAK / replacement under each lifecycle threshold,
    from the statistical factors alone (no model call, news off): one threshold at a time around
    the defaults, over the screen's top candidates of every month-end, each held --hold sessions."""
    import json

    from agent.pairs.lifecycle.sweep import sweep_store, sweep_table
    from agent.pairs.screen.causal import ScreenConfig
    from localfin import env

    grid: dict[str, list[float]] = {}
    for spec in vary:
        name, sep, values = spec.partition("=")
        try:
            grid[name.strip()] = [float(v) for v in values.split(",") if v.strip()]
        except ValueError:
            raise typer.BadParameter(f"--vary {spec!r}: allowed NAME=V1,V2 with numbers") from None
        if not sep or not grid[name.strip()]:
            raise typer.BadParameter(f"--vary {spec!r}: allowed NAME=V1,V2 (at least one value)")
    cfg = ScreenConfig(price_field=price_field)
    path, pools, span = store or env.default_store_path(), parse_pools(pool), parse_years(years)
    check_years(path, pools, span)
    with quiet_run(ctx, "pairs-lifecycle-sweep", announce=False) as rl:
        rows = sweep_store(
            path,
            pools,
            span,
            top=top,
            hold=hold,
            screen=cfg,
            grid=grid or None,
            progress=progress_for(rl),
        )
        if out is not None:
            out.parent.mkdir(parents=True, exist_ok=True)
            doc = [{"pool": p, **r.to_dict()} for p, r in rows]
            out.write_text(json.dumps(doc, indent=1, default=str) + "\n", encoding="utf-8")
        result(rl, sweep_table(rows))


@app.command("baselines")
def baselines(
    ctx: typer.Context,
    pool: list[str] = typer.Option(..., "--pool", help="NAME=T1,T2,... (repeat for several pools)."),
    years: str = typer.Option(..., "--years", help="Yearly test windows, e.g. 2005-2023."),
    out: Path = typer.Option(..., "--out", help="Output folder (rolling.md, rolling.json, run folders)."),
    store: Path | None = typer.Option(
        None,
        "--store",
        help="SQLite market store (default: $LOCALFIN_STORE or $LOCALFIN_DATA_DIR/market.sqlite).",
    ),
    train_sessions: int = typer.Option(40, "--train-sessions", help="Sessions before each year (EG-DDQN)."),
    seed: int = typer.Option(0, "--seed"),
    execution: str = typer.Option("close", "--execution", help="Fills: close (the papers') or next_open."),
    cost_bps: float = typer.Option(0.0, "--cost-bps", help="Fees, basis points per unit of turnover."),
    slippage_bps: float = typer.Option(0.0, "--slippage-bps", help="Slippage, bps per unit of turnover."),
    borrow_bps: float = typer.Option(
        0.0, "--borrow-bps-per-year", help="Short leg's lending fee, bps a year, accrued per session."
    ),
    methods: str = typer.Option(
        "long_short,short_long,equal_weight,eg_z,eg_ddqn",
        "--methods",
        help="Comma-separated baselines: the built-in ones (default: all five) and any installed "
        "plugin's (localfin plugins list).",
    ),
    options: list[str] = typer.Option(
        [],
        "--option",
        help="METHOD.KEY=VALUE: a setting of one baseline, the value as in TOML (eg_z.entry_z=1.5, "
        "a plugin's option); repeatable. Default: each baseline's defaults.",
    ),
) -> None:
    """The non-LLM baselines (L-S, S-L, Equal-Weight, EG+Z, EG-DDQN, installed plugins' pair rules)
    over rolling yearly windows; no model is called."""
    from agent.data.store import MarketStore
    from agent.pairs.baselines.rolling import run_rolling
    from agent.pairs.baselines.runner import RunSettings
    from localfin import env

    pools, span = parse_pools(pool), parse_years(years)
    if train_sessions < 1:
        raise typer.BadParameter(f"--train-sessions {train_sessions}: allowed >= 1")
    configs = baseline_configs(methods, options)
    settings = RunSettings(
        cost_bps=cost_bps, execution=execution, slippage_bps=slippage_bps, borrow_bps_per_year=borrow_bps
    )
    path = store or env.default_store_path()
    check_years(path, pools, span)  # before the output folder is made
    with (
        quiet_run(ctx, "baselines", out) as rl,
        MarketStore(path, create=False) as st,
    ):
        res = run_rolling(
            st,
            pools,
            years=span,
            out_dir=out,
            seed=seed,
            train_sessions=train_sessions,
            configs=configs,
            settings=settings,
            progress=progress_for(rl),
        )
        result(rl, f"{len(res.rows)} runs; tables: {out / 'rolling.md'}")
