"""EG-DDQN: a Double Deep Q-Network (van Hasselt et al. 2016; the DQN of Mnih et al. 2015) that
trades the Engle-Granger spread of the screen's top pair, in PyTorch on the CPU.

State at session t (all from data up to t): the last ``z_lags`` z-scores of the spread (the EG+Z z:
log A - beta log B, beta the screen's hedge ratio, trailing ``z_window`` common sessions; clipped to
+-``z_clip`` and divided by ``z_scale``), the spread's rolling half-life over ``half_life_window`` common
sessions as a fraction of ``half_life_cap`` (1 when it exceeds the cap or does not revert), and the
position held into t (one-hot LONG_SHORT / SHORT_LONG / FLAT: the previous action).
Actions: LONG_SHORT, SHORT_LONG, FLAT. Reward of the action at t: its settled return over the
transition to t+1 (:class:`agent.pairs.market.execution.Book`, the run's exposure and execution
settings: close to close at no cost by default), times ``reward_scale`` for the network (the
curve reports unscaled returns).

Training data: the pair's sessions from ``history_sessions`` before the training window's first
session to the training window's last session, so every reward settles before step 001. The
hedge ratio in the features is the screen's at step 001: training happens at step 001's close,
after the selection, so it is known then; nothing after step 001's close is read, and the test
window's prices are never read by training (a test checks it).

Learning: ``episodes`` passes over the training transitions in time order with an epsilon-greedy
policy (epsilon linear per episode from ``eps_start`` to ``eps_end`` over ``eps_decay_episodes``),
each transition stored in a replay buffer of ``buffer_size``; once ``min_replay`` transitions are
stored, every step draws a minibatch of ``batch_size`` uniformly and takes one Adam step (``lr``)
on the Huber loss (``huber_delta``) between Q(s, a) and the Double-DQN target
r + gamma Q_target(s', argmax_a' Q_online(s', a')) (no bootstrap past the last transition or into
a session without a state); the target network copies the online one every ``target_sync``
gradient steps. Seeds: the torch initialisation (inside ``torch.random.fork_rng``, so the
caller's global generator is untouched), a ``random.Random`` for exploration and a numpy
``Generator`` for the minibatches, all from the run seed; torch runs single-threaded with
deterministic algorithms, so a run is reproducible to the bit on one machine.

At test time the network is frozen and acts greedily, the position starting FLAT at step 001.
On a session without a state (too little history) or not tradable it holds FLAT.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from agent.pairs.baselines.common import PairSeries, priced, rolling_half_life, spread_zscores
from agent.pairs.market.execution import PAPER, Book, ExecutionSettings
from agent.pairs.market.settlement import ACTIONS, FLAT, LegWeights, leg_weights, no_beta_weights
from localfin.errors import ConfigError

__all__ = ["DDQNConfig", "DDQNResult", "ddqn_features", "train_and_act"]

_FLAT_INDEX = ACTIONS.index(FLAT)


@dataclass(frozen=True)
class DDQNConfig:
    """EG-DDQN settings (sessions are common sessions of the pair).

    z_lags: z-scores in the state (>= 1); z_window: z window (>= 3, as EG+Z);
    half_life_window: rolling half-life window (>= 10); half_life_cap: its scale in sessions (> 0);
    z_clip: |z| cap in the state (> 0); z_scale: the clipped z is divided by this in the state (> 0);
    history_sessions: sessions of the pair's history before the training window that are also
      trained on (>= 0; fewer when the store's history is shorter);
    hidden: units of each hidden layer; hidden_layers: hidden layers of the Q-network (>= 1,
      ReLU after each); episodes: passes over the training data;
    batch_size, buffer_size, min_replay: replay settings (min_replay >= batch_size);
    gamma: discount in [0, 1); lr: Adam learning rate; target_sync: C, gradient steps between
      target-network syncs; eps_start / eps_end: exploration rate of the first and last
      episodes (eps_start >= eps_end in [0, 1]); eps_decay_episodes: episodes of the decay (>= 1);
    reward_scale: factor on returns fed to the network (> 0); huber_delta: Huber threshold (> 0).
    """

    z_lags: int = 5
    z_window: int = 20
    half_life_window: int = 60
    half_life_cap: float = 60.0
    z_clip: float = 4.0
    z_scale: float = 2.0
    history_sessions: int = 500
    hidden: int = 32
    hidden_layers: int = 2
    episodes: int = 12
    batch_size: int = 32
    buffer_size: int = 20_000
    min_replay: int = 256
    gamma: float = 0.9
    lr: float = 1e-3
    target_sync: int = 200
    eps_start: float = 1.0
    eps_end: float = 0.05
    eps_decay_episodes: int = 8
    reward_scale: float = 100.0
    huber_delta: float = 1.0

    def __post_init__(self) -> None:
        ints = {
            "z_lags": (self.z_lags, 1),
            "z_window": (self.z_window, 3),
            "half_life_window": (self.half_life_window, 10),
            "history_sessions": (self.history_sessions, 0),
            "hidden": (self.hidden, 1),
            "hidden_layers": (self.hidden_layers, 1),
            "episodes": (self.episodes, 1),
            "batch_size": (self.batch_size, 1),
            "target_sync": (self.target_sync, 1),
            "eps_decay_episodes": (self.eps_decay_episodes, 1),
        }
        for name, (value, low) in ints.items():
            if not isinstance(value, int) or value < low:
                raise ConfigError(f"{name}={value!r}; allowed: an integer >= {low}")
        if not self.batch_size <= self.min_replay <= self.buffer_size:
            raise ConfigError(
                f"min_replay={self.min_replay}; allowed: batch_size={self.batch_size} <= min_replay <= "
                f"buffer_size={self.buffer_size}"
            )
        positive = {
            "half_life_cap": self.half_life_cap,
            "z_clip": self.z_clip,
            "z_scale": self.z_scale,
            "lr": self.lr,
            "reward_scale": self.reward_scale,
            "huber_delta": self.huber_delta,
        }
        for name, value in positive.items():
            if not (math.isfinite(value) and value > 0):
                raise ConfigError(f"{name}={value!r}; allowed: a finite number > 0")
        if not 0.0 <= self.gamma < 1.0:
            raise ConfigError(f"gamma={self.gamma}; allowed: [0, 1)")
        if not 0.0 <= self.eps_end <= self.eps_start <= 1.0:
            raise ConfigError(
                f"eps_start={self.eps_start}, eps_end={self.eps_end}; allowed: 0 <= eps_end <= eps_start <= 1"
            )

    @property
    def method(self) -> str:
        return "eg_ddqn"

    @property
    def state_size(self) -> int:
        return self.z_lags + 1 + len(ACTIONS)

    def epsilon(self, episode: int) -> float:
        """Exploration rate of ``episode`` (0-based)."""
        frac = min(1.0, episode / max(1, self.eps_decay_episodes - 1))
        return self.eps_start + (self.eps_end - self.eps_start) * frac


@dataclass(frozen=True)
class DDQNResult:
    """Test actions and notes (one per transition), the training curve (one dict per episode:
    episode, epsilon, return, greedy_return, loss, updates, transitions) and training facts."""

    actions: tuple[str, ...]
    notes: tuple[str, ...]
    curve: tuple[dict[str, Any], ...]
    info: dict[str, Any]


def ddqn_features(series: PairSeries, config: DDQNConfig, start: int) -> tuple[np.ndarray, np.ndarray]:
    """Market part of the state at each session >= ``start`` (rows before are unused) and a mask
    of sessions where it is complete: (n_dates, z_lags + 1) float32 and (n_dates,) bool.

    The z lags are the last ``z_lags`` common sessions' z (most recent first); a state needs all
    of them and a half-life (NaN only before ``half_life_window`` common sessions or for a
    constant spread; +inf, no reversion, maps to 1)."""
    cfg = config
    n = len(series.dates)
    z = spread_zscores(series, cfg.z_window)
    hl = rolling_half_life(series, cfg.half_life_window, start)
    idx = np.flatnonzero(priced(series))
    zc = np.clip(z[idx], -cfg.z_clip, cfg.z_clip) / cfg.z_scale
    feats = np.zeros((n, cfg.z_lags + 1), dtype=np.float32)
    valid = np.zeros(n, dtype=bool)
    for j in range(cfg.z_lags - 1, len(idx)):
        t = idx[j]
        lags = zc[j - cfg.z_lags + 1 : j + 1][::-1]
        if t < start or np.isnan(hl[t]) or not np.all(np.isfinite(lags)):
            continue
        feats[t, : cfg.z_lags] = lags
        feats[t, cfg.z_lags] = min(float(hl[t]), cfg.half_life_cap) / cfg.half_life_cap
        valid[t] = True
    return feats, valid


def _weights(
    exposure: str, betas: np.ndarray | None, t: int, series: PairSeries, legs: str = "dollar_neutral"
) -> LegWeights:
    if exposure == "no_beta":
        return no_beta_weights(legs, series.price_a[t], series.price_b[t])
    if betas is None:
        return leg_weights(exposure)  # 'beta' without betas raises there, naming the field
    return leg_weights("beta", float(betas[t]))


def _build_net(torch: Any, cfg: DDQNConfig) -> Any:
    nn = torch.nn
    layers: list[Any] = []
    width = cfg.state_size
    for _ in range(cfg.hidden_layers):
        layers += [nn.Linear(width, cfg.hidden), nn.ReLU()]
        width = cfg.hidden
    return nn.Sequential(*layers, nn.Linear(width, len(ACTIONS)))


def _greedy(
    torch: Any, net: Any, feats: np.ndarray, usable: np.ndarray, lo: int, hi: int
) -> tuple[list[int], np.ndarray]:
    """Greedy actions (indices) for decisions at sessions lo..hi-1, the position starting FLAT,
    and the Q-values used. One batched forward pass over the 3 possible positions per session."""
    n = hi - lo
    eye = np.eye(len(ACTIONS), dtype=np.float32)
    x = np.concatenate([np.repeat(feats[lo:hi], len(ACTIONS), axis=0), np.tile(eye, (n, 1))], axis=1)
    with torch.no_grad():
        q = net(torch.from_numpy(x)).numpy().reshape(n, len(ACTIONS), len(ACTIONS))
    pos = _FLAT_INDEX
    out: list[int] = []
    qs = np.zeros((n, len(ACTIONS)), dtype=np.float32)
    for i in range(n):
        if usable[lo + i]:
            qs[i] = q[i, pos]
            pos = int(np.argmax(q[i, pos]))
        else:
            pos = _FLAT_INDEX
        out.append(pos)
    return out, qs


def _settle_path(
    series: PairSeries,
    actions: Sequence[int],
    lo: int,
    exposure: str,
    betas: np.ndarray | None,
    execution: ExecutionSettings,
    no_beta_legs: str = "dollar_neutral",
) -> float:
    """Sum of settled returns of actions decided at lo, lo+1, ... (the training score)."""
    book, legs = Book(execution, series.quote), (series.ticker_a, series.ticker_b)
    total = 0.0
    for i, a in enumerate(actions):
        t = lo + i
        w = _weights(exposure, betas, t, series, no_beta_legs) if a != _FLAT_INDEX else leg_weights("no_beta")
        total += book.settle(t, legs, ACTIONS[a], w).realized
    return total


def train_and_act(
    series: PairSeries,
    ok: np.ndarray,
    config: DDQNConfig,
    *,
    train_first: int,
    train_last: int,
    exposure: str,
    betas: np.ndarray | None,
    seed: int,
    execution: ExecutionSettings = PAPER,
    no_beta_legs: str = "dollar_neutral",
) -> DDQNResult:
    """Train on transitions decided at sessions ``train_first - history_sessions`` ..
    ``train_last - 1`` (indices into ``series.dates``; rewards settle by ``train_last`` <
    ``series.first``), then act greedily on the test window.

    ``ok``: tradable sessions (:func:`agent.pairs.baselines.common.tradable`)."""
    import torch

    cfg = config
    if not 0 <= train_first <= train_last < series.first:
        raise ConfigError(
            f"training sessions {train_first}..{train_last}; allowed: 0 <= first <= last < step 001 "
            f"(index {series.first})"
        )
    lo = max(0, train_first - cfg.history_sessions)
    hi = train_last
    feats, valid = ddqn_features(series, cfg, lo)
    usable = valid & ok
    steps = [t for t in range(lo, hi) if usable[t]]
    if not steps:
        raise ConfigError(
            f"no training transition: none of sessions {series.dates[lo]}..{series.dates[hi]} has a state "
            f"(z_window={cfg.z_window}, z_lags={cfg.z_lags}, half_life_window={cfg.half_life_window})"
        )
    legs = (series.ticker_a, series.ticker_b)
    book = Book(execution, series.quote)
    py_rng = random.Random(seed)
    np_rng = np.random.default_rng(seed)
    old_threads = torch.get_num_threads()
    old_det = torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            online = _build_net(torch, cfg)
            target = _build_net(torch, cfg)
        target.load_state_dict(online.state_dict())
        opt = torch.optim.Adam(online.parameters(), lr=cfg.lr)
        feat_t = torch.from_numpy(feats)
        eye = torch.eye(len(ACTIONS))
        cap = cfg.buffer_size
        b_t = np.zeros(cap, dtype=np.int64)
        b_pos = np.zeros(cap, dtype=np.int64)
        b_a = np.zeros(cap, dtype=np.int64)
        b_r = np.zeros(cap, dtype=np.float32)
        b_done = np.zeros(cap, dtype=np.float32)
        size = head = updates = 0
        curve: list[dict[str, Any]] = []

        def state(t_idx: Any, pos_idx: Any) -> Any:
            return torch.cat([feat_t[t_idx], eye[pos_idx]], dim=1)

        for episode in range(cfg.episodes):
            eps = cfg.epsilon(episode)
            pos = _FLAT_INDEX
            book.reset()
            ep_return, losses = 0.0, []
            for t in range(lo, hi):
                if not usable[t]:
                    pos = _FLAT_INDEX
                    book.reset()
                    continue
                if py_rng.random() < eps:
                    a = py_rng.randrange(len(ACTIONS))
                else:
                    with torch.no_grad():
                        q = online(state(torch.tensor([t]), torch.tensor([pos])))
                    a = int(torch.argmax(q[0]))
                w = _weights(exposure, betas, t, series, no_beta_legs)
                s = book.settle(t, legs, ACTIONS[a], w)
                ep_return += s.realized
                done = t + 1 >= hi or not usable[t + 1]
                b_t[head], b_pos[head], b_a[head] = t, pos, a
                b_r[head], b_done[head] = s.realized * cfg.reward_scale, float(done)
                head, size = (head + 1) % cap, min(size + 1, cap)
                pos = a
                if size < cfg.min_replay:
                    continue
                k = np_rng.integers(0, size, cfg.batch_size)
                tb, ab = torch.from_numpy(b_t[k]), torch.from_numpy(b_a[k])
                s_now = state(tb, torch.from_numpy(b_pos[k]))
                s_next = state(tb + 1, ab)
                q_sa = online(s_now).gather(1, ab.unsqueeze(1)).squeeze(1)
                with torch.no_grad():
                    a_star = online(s_next).argmax(dim=1, keepdim=True)
                    q_next = target(s_next).gather(1, a_star).squeeze(1)
                    y = torch.from_numpy(b_r[k]) + cfg.gamma * (1.0 - torch.from_numpy(b_done[k])) * q_next
                loss = torch.nn.functional.huber_loss(q_sa, y, delta=cfg.huber_delta)
                opt.zero_grad()
                loss.backward()
                opt.step()
                losses.append(float(loss.detach()))
                updates += 1
                if updates % cfg.target_sync == 0:
                    target.load_state_dict(online.state_dict())
            greedy, _ = _greedy(torch, online, feats, usable, lo, hi)
            curve.append(
                {
                    "episode": episode + 1,
                    "epsilon": eps,
                    "return": ep_return,
                    "greedy_return": _settle_path(
                        series, greedy, lo, exposure, betas, execution, no_beta_legs
                    ),
                    "loss": float(np.mean(losses)) if losses else None,
                    "updates": updates,
                    "transitions": len(steps),
                }
            )
        f, n = series.first, series.n_sessions - 1
        test_actions, qs = _greedy(torch, online, feats, usable, f, f + n)
    finally:
        torch.set_num_threads(old_threads)
        torch.use_deterministic_algorithms(old_det)
    notes = tuple(
        f"q={q[0]:+.3f}/{q[1]:+.3f}/{q[2]:+.3f}" if usable[f + i] else "no state" for i, q in enumerate(qs)
    )
    info = {
        "train_sessions": [str(series.dates[lo]), str(series.dates[hi])],
        "train_transitions": len(steps),
        "history_used": train_first - lo,
        "gradient_steps": updates,
        "config": asdict(cfg),
    }
    return DDQNResult(tuple(ACTIONS[a] for a in test_actions), notes, tuple(curve), info)
