"""What the benchmark times: its settings, the configurations (rows) and the fixed held-out prompts."""
import json
from dataclasses import dataclass, field
from pathlib import Path

from ...sampling_config import SamplingConfig
from ...tree_draft import tree_size

PROMPTS_FILE = Path(__file__).resolve().parents[3] / "assets" / "bench_prompts.json"


SAMPLING = SamplingConfig(temperature=1.0)  # sampling rows: the model's own distribution, no truncation


TARGETS = {  # the benchmark's goals for the bundled pair, greedy, 64 new tokens, median over prompts
    "vs_hf": 1.15, "of_prediction": 0.9, "fewer_passes": 2.5, "wall": 1.3, "wall_stretch": 1.5, "trace": 0.05,
    "tree_tokens_per_pass": 1.15, "tree_max_nodes": 32}  # some tree of <= 32 nodes vs the chain of its depth
TREE_DEPTH = 4  # the depth of the best-first tree rows; their rival chain has gamma = this


@dataclass(frozen=True)
class Config:
    """One thing to time. method: "plain" | "spec" (our core) | "tree" (our token trees) | "hf" |
    "hf-assisted" (transformers)."""
    method: str
    decoding: str = "greedy"  # "greedy" | "sampling"
    drafter: str = ""  # "model" | "ngram" for "spec"; the assistant schedule for "hf-assisted"
    gamma: int = 0  # drafts per round (HF: constant num_assistant_tokens; 0 where it does not apply)
    trace: bool = True  # our sampler's trace flag (True is the default callers get)
    forward: str = "core"  # our rows: "core" (lm.CachedLM's own GPT-2 pass) or "transformers" (model forward)
    shape: tuple[int, ...] = ()  # tree rows: children per depth (gamma is the depth)
    node_budget: int = 0  # tree rows: a best-first tree of this many nodes (0: the static shape)

    @property
    def nodes(self) -> int:
        """Tree rows: the most nodes a round drafts."""
        return self.node_budget or tree_size(self.shape)

    @property
    def label(self) -> str:
        if self.method == "plain":
            return f"plain {self.decoding}" + self.forward_tag
        if self.method == "hf":
            return "hf generate (plain greedy)"
        if self.method == "hf-assisted":
            return f"hf assisted, {self.drafter}" + (f" gamma={self.gamma}" if self.gamma else "")
        if self.method == "tree":
            how = (f"best-first budget={self.node_budget} depth={self.gamma}" if self.node_budget
                   else "shape=" + ",".join(map(str, self.shape)))
            return f"tree {self.decoding} {how} ({self.nodes} nodes)" + self.forward_tag
        return (f"spec {self.drafter} {self.decoding} gamma={self.gamma}" + ("" if self.trace else " (trace off)")
                + self.forward_tag)

    @property
    def forward_tag(self) -> str:
        return " [transformers forward]" if self.forward == "transformers" else ""


@dataclass
class Settings:
    pairs: list[str] = field(default_factory=lambda: ["shakespeare"])
    gammas: list[int] = field(default_factory=lambda: list(range(1, 9)))
    max_new_tokens: int = 64  # the targets' setting
    reps: int = 5  # repetitions per (prompt, config); the median is reported
    prompts: int | None = None  # the first N prompts of each kind ratio kept (None: all)
    hf: bool = True  # include transformers' generate()
    sampling: bool = True  # include the sampling rows
    trace_reps: int = 6  # repetitions of the trace on/off comparison at the best gamma
    threads: int = 1  # torch threads; 1: on a shared 2-core machine two OpenMP threads made passes
    # up to 8x slower whenever anything else ran, and small models gain little from a second one
    quick: bool = False
    profile: bool = False  # also write a cProfile of speculative greedy decoding at the best gamma
    precision: str = "fp32"  # of both models (pairs.PRECISIONS); bf16 is lossy, never the default
    device: str = "cpu"  # "cpu", "cuda", ... or "auto" (load_pair's choice); peak memory is host RSS
    # token-tree rows (greedy, model drafter), next to the chain of gamma = their depth
    trees: list[tuple[int, ...]] = field(default_factory=lambda: [(2, 2, 1, 1), (2, 2, 2, 2), (3, 2, 1, 1), (4, 4, 1, 1)])
    tree_budgets: list[int] = field(default_factory=lambda: [16, 30])  # best-first trees TREE_DEPTH deep
    out: Path = Path("bench-out")


def quick_settings(**over) -> Settings:
    """A CI-sized run: two prompts (one open, the repetitive one), few gammas, short outputs."""
    s = Settings(gammas=[1, 2, 4], max_new_tokens=32, reps=2, prompts=1, trace_reps=2, quick=True,
                 trees=[(2, 2, 1, 1)], tree_budgets=[16])
    for k, v in over.items():
        setattr(s, k, v)
    return s


def load_prompts(limit: int | None = None) -> list[dict]:
    """The fixed benchmark prompts; `limit` keeps the first N open prompts (the repetitive ones stay)."""
    prompts = json.loads(PROMPTS_FILE.read_text(encoding="utf-8"))["prompts"]
    open_ = [p for p in prompts if p["kind"] == "open"]
    rest = [p for p in prompts if p["kind"] != "open"]
    return (open_ if limit is None else open_[:limit]) + rest


def configs(s: Settings) -> list[Config]:
    out = [Config("plain", "greedy")]
    decodings = ["greedy", "sampling"] if s.sampling else ["greedy"]
    if s.sampling:
        out.append(Config("plain", "sampling"))
    for decoding in decodings:
        for drafter in ("model", "ngram"):
            out += [Config("spec", decoding, drafter, g) for g in s.gammas]
    trees = [Config("tree", "greedy", "model", len(t), shape=tuple(t)) for t in s.trees]
    trees += [Config("tree", "greedy", "model", TREE_DEPTH, shape=(1,) * TREE_DEPTH, node_budget=b)
              for b in s.tree_budgets]
    chains = {Config("spec", "greedy", "model", t.gamma) for t in trees} - set(out)
    out += sorted(chains, key=lambda c: c.gamma) + trees  # the chain each tree is compared with
    if s.hf:
        # Our core on transformers' own forward: the same algorithm with the same per-pass costs as
        # the HF rows, so the comparison below can be read apples to apples.
        out.append(Config("plain", "greedy", forward="transformers"))
        out += [Config("spec", "greedy", "model", g, forward="transformers") for g in s.gammas]
        out.append(Config("hf"))
        out += [Config("hf-assisted", drafter="constant", gamma=g) for g in s.gammas]
        out += [Config("hf-assisted", drafter="default"), Config("hf-assisted", drafter="heuristic")]
    return out


def baseline_of(cfg: Config) -> Config:
    """What a row's speedup is measured against: plain decoding of the same kind and forward; for
    transformers' assisted generation, transformers' own plain generate(); for that, our plain greedy."""
    if cfg.method == "hf-assisted":
        return Config("hf")
    if cfg.method == "hf":
        return Config("plain", "greedy")
    return Config("plain", cfg.decoding, forward=cfg.forward)
