#!/usr/bin/python3
"""Compare darkbert's forward pass with PyTorch (eager) and ONNX Runtime on one BERT-base-shaped encoder.

Every runner gets the same shape: embeddings (word + position + token type, LayerNorm) followed by post-LN
BERT layers with erf GELU, random seeded weights, and every layer's attention pattern [B, heads, L, L] kept
as an output. Each runner is timed in its own process (so peak RSS is its own), batch by batch, and the
script prints best/median ms per batch and per sequence, GFLOP/s, and the ratio peer-best / darkbert.

    /usr/bin/python3 benchmarks/compare_peers.py                      # batch 1 and 8, 5 reps, all runners
    /usr/bin/python3 benchmarks/compare_peers.py --skip-darkbert --batches 1 --reps 3
    /usr/bin/python3 benchmarks/compare_peers.py --darkbert /tmp/build_me/examples/darkbert --json out.json
    /usr/bin/python3 benchmarks/compare_peers.py --mode train-step --batches 8          # BERT-base train step
    /usr/bin/python3 benchmarks/compare_peers.py --mode train-step --batches 32 --layers 4 --hidden 256 \
        --heads 4 --ff 1024                                                            # the mini shape
    /usr/bin/python3 benchmarks/compare_peers.py --avx2                  # AVX2 like-for-like, see below

--avx2 is the like-for-like comparison for CPUs without AVX-512, runnable on any AVX2 machine: darkbert on
its avx2 kernel path (DARKBERT_KERNEL=avx2) and PyTorch, both with OpenBLAS's Haswell (AVX2) kernels
(OPENBLAS_CORETYPE=Haswell), in one run, with the ratio. ONNX Runtime picks its own kernels by CPU and
cannot be held to AVX2, so on an AVX-512 machine it is left out of --avx2; where the CPU has no AVX-512,
the plain run (no --avx2) already compares darkbert's avx2 path with PyTorch and ONNX Runtime. Without
--avx2, --darkbert-kernel forces darkbert's path (`darkbert bench ... --kernel`); the path it ran is in
its note (kernel=...).

--mode train-step times one training step of a BERT sequence classifier instead (pooler + 2-way classifier on
the encoder, dropout 0.1 everywhere BERT has it, cross-entropy, backward, AdamW): torch in train mode with
torch.optim.AdamW, darkbert with `darkbert bench train-step`. ONNX Runtime has no training and is skipped.

PyTorch thread settings are torch.set_num_threads(n) (intra-op); Debian's torch calls OpenBLAS, whose own
thread pool still uses every core. ONNX Runtime runs through Node (npm package onnxruntime-node, installed
with --ignore-scripts into the cache folder, outside the repo), CPU provider, graph optimisation on,
intra-op threads n, inter-op 1. The exported .onnx files and input ids are cached there too.
darkbert runs `darkbert bench forward ...` and prints one `key=value ...` line, parsed generically.
"""

from __future__ import annotations

import argparse  # command line
import json  # worker results, node runner results, --json output
import os  # environment for subprocesses
import shutil  # which(node/npm)
import statistics  # median
import subprocess  # one process per runner
import sys  # executable, exit status
import time  # perf_counter
from dataclasses import asdict, dataclass, field  # Shape, Result
from pathlib import Path  # cache paths

import numpy as np  # output comparison
import torch  # eager runner, ONNX export
import torch.nn.functional as F  # gelu, softmax, layer_norm

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
ORT_RUNNER = HERE / "ort_runner.js"
ONNX_OPSET = 14


# ---------------------------------------------------------------------------------------------- shapes
@dataclass(frozen=True)
class Shape:
    layers: int = 12
    hidden: int = 768
    heads: int = 12
    ff: int = 3072
    seq: int = 128
    vocab: int = 30522

    def tag(self) -> str:
        return f"l{self.layers}_h{self.hidden}_a{self.heads}_f{self.ff}_s{self.seq}_v{self.vocab}"


def flops_per_sequence(s: Shape) -> float:
    """Multiply-adds x 2 of one sequence: QKVO and FFN projections, QK^T and AV (embeddings, softmax,
    LayerNorm and GELU are lower-order and left out). BERT-base at L = 128: 22.35 GFLOP."""
    qkvo = 4 * 2 * s.seq * s.hidden * s.hidden
    ffn = 2 * 2 * s.seq * s.hidden * s.ff
    attention = 2 * 2 * s.seq * s.seq * s.hidden  # QK^T and AV over all heads
    return float(s.layers * (qkvo + ffn + attention))


# ---------------------------------------------------------------------------------------------- results
@dataclass
class Result:
    runner: str  # "torch", "onnx", "darkbert"
    threads: str  # "1", "2", or "-" for darkbert (its own setting)
    batch: int
    best_ms_per_batch: float | None = None
    median_ms_per_batch: float | None = None
    peak_rss_mb: float | None = None
    times_ms: list[float] = field(default_factory=list)
    note: str = ""

    @staticmethod
    def from_times(runner, threads, batch, times_ms, peak_rss_mb, note=""):
        return Result(runner, str(threads), batch, min(times_ms), statistics.median(times_ms), peak_rss_mb,
                      list(times_ms), note)

    def ok(self) -> bool:
        return self.best_ms_per_batch is not None

    def best_ms_per_seq(self) -> float | None:
        return None if not self.ok() else self.best_ms_per_batch / self.batch

    def median_ms_per_seq(self) -> float | None:
        return None if self.median_ms_per_batch is None else self.median_ms_per_batch / self.batch


# ---------------------------------------------------------------------------------------------- BLAS check
def check_blas() -> bool:
    """Says which libblas.so.3 torch really loaded and how fast a 1024^3 SGEMM runs. Returns False (after a
    loud warning) when it is not OpenBLAS: then the torch numbers mean nothing."""
    try:
        alt = subprocess.run(["update-alternatives", "--display", "libblas.so.3-x86_64-linux-gnu"],
                             capture_output=True, text=True).stdout
        current = next((l.strip() for l in alt.splitlines() if "currently points to" in l), "unknown")
    except OSError:
        current = "update-alternatives not available"
    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    for _ in range(3):
        a @ b
    start = time.perf_counter()
    for _ in range(10):
        a @ b
    gflops = 10 * 2 * 1024**3 / (time.perf_counter() - start) / 1e9
    with open("/proc/self/maps") as maps:
        loaded = sorted({l.split()[-1] for l in maps if "blas" in l.lower() and "/" in l})
    openblas = any("openblas" in path for path in loaded)
    print(f"BLAS: libblas.so.3 alternative {current}")
    print(f"BLAS: loaded by torch: {', '.join(loaded) or 'none found'}")
    print(f"BLAS: torch 1024^3 SGEMM {gflops:.0f} GFLOP/s (torch threads {torch.get_num_threads()})")
    if not openblas or gflops < 20:
        bar = "!" * 100
        print(f"\n{bar}\n!!! WARNING: torch is NOT running on OpenBLAS (or SGEMM is far too slow: {gflops:.1f} "
              f"GFLOP/s).\n!!! Torch numbers below are meaningless. Install libopenblas0-pthread and check\n"
              f"!!!   update-alternatives --display libblas.so.3-x86_64-linux-gnu\n{bar}\n")
        return False
    return True


# ---------------------------------------------------------------------------------------------- the model
class BertLayer(torch.nn.Module):
    """Post-LN BERT layer: x = LN(x + Attn(x)); x = LN(x + FFN(x)); returns (x, attention pattern)."""

    def __init__(self, s: Shape, dropout: float = 0.0):
        super().__init__()
        self.p = dropout  # BERT's hidden and attention dropout (only in train mode)
        self.heads, self.head_dim = s.heads, s.hidden // s.heads
        self.q, self.k, self.v, self.o = (torch.nn.Linear(s.hidden, s.hidden) for _ in range(4))
        self.ln_attn = torch.nn.LayerNorm(s.hidden, eps=1e-12)
        self.up, self.down = torch.nn.Linear(s.hidden, s.ff), torch.nn.Linear(s.ff, s.hidden)
        self.ln_ffn = torch.nn.LayerNorm(s.hidden, eps=1e-12)

    def split(self, x):  # [B, L, H] -> [B, heads, L, d]
        b, l, _ = x.shape
        return x.view(b, l, self.heads, self.head_dim).transpose(1, 2)

    def forward(self, x, additive_mask):
        b, l, h = x.shape
        q, k, v = self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x))
        scores = q @ k.transpose(-1, -2) / self.head_dim**0.5 + additive_mask  # [B, heads, L, L]
        pattern = scores.softmax(dim=-1)
        z = (F.dropout(pattern, self.p, self.training) @ v).transpose(1, 2).reshape(b, l, h)  # [B, L, H]
        x = self.ln_attn(x + F.dropout(self.o(z), self.p, self.training))
        x = self.ln_ffn(x + F.dropout(self.down(F.gelu(self.up(x))), self.p, self.training))  # erf GELU
        return x, pattern


class BertEncoder(torch.nn.Module):
    """Embeddings + `layers` BERT layers. forward(input_ids, attention_mask, token_type_ids) ->
    (last hidden state [B, L, H], pattern of layer 0, ..., pattern of layer n-1)."""

    def __init__(self, s: Shape, dropout: float = 0.0):
        super().__init__()
        self.p = dropout
        self.word = torch.nn.Embedding(s.vocab, s.hidden)
        self.position = torch.nn.Embedding(s.seq, s.hidden)
        self.token_type = torch.nn.Embedding(2, s.hidden)
        self.ln_embed = torch.nn.LayerNorm(s.hidden, eps=1e-12)
        self.layers = torch.nn.ModuleList(BertLayer(s, dropout) for _ in range(s.layers))
        self.register_buffer("position_ids", torch.arange(s.seq).unsqueeze(0), persistent=False)

    def forward(self, input_ids, attention_mask, token_type_ids):
        x = self.word(input_ids) + self.position(self.position_ids) + self.token_type(token_type_ids)
        x = F.dropout(self.ln_embed(x), self.p, self.training)
        additive_mask = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0  # [B, 1, 1, L]
        patterns = []
        for layer in self.layers:
            x, pattern = layer(x, additive_mask)
            patterns.append(pattern)
        return (x, *patterns)


class BertClassifier(torch.nn.Module):
    """BertForSequenceClassification's shape: encoder, pooler (tanh of a dense layer on the first token),
    dropout, 2-way classifier. Dropout 0.1 as BERT trains."""

    def __init__(self, s: Shape):
        super().__init__()
        self.encoder = BertEncoder(s, dropout=0.1)
        self.pooler = torch.nn.Linear(s.hidden, s.hidden)
        self.classifier = torch.nn.Linear(s.hidden, 2)

    def forward(self, input_ids, attention_mask, token_type_ids):
        x = self.encoder(input_ids, attention_mask, token_type_ids)[0]
        pooled = torch.tanh(self.pooler(x[:, 0]))
        return self.classifier(F.dropout(pooled, 0.1, self.training))


def build_model(s: Shape, seed: int, module=None) -> torch.nn.Module:
    """Random weights from `seed`: N(0, 0.02) for matrices, embeddings and biases, LayerNorm gain 1 + N(0, 0.02)."""
    torch.manual_seed(seed)
    model = (module or BertEncoder)(s)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.normal_(0.0, 0.02)
            if name.endswith("weight") and ".ln_" in f".{name}":
                p.add_(1.0)
    return model.eval()


def make_inputs(s: Shape, batch: int, seed: int):
    """(input_ids, attention_mask, token_type_ids), each int64 [B, L]; ids are random but fixed by `seed`."""
    gen = torch.Generator().manual_seed(seed + 1000 * batch)
    ids = torch.randint(0, s.vocab, (batch, s.seq), generator=gen, dtype=torch.int64)
    return ids, torch.ones_like(ids), torch.zeros_like(ids)


# ---------------------------------------------------------------------------------------------- torch
def cpu_has_avx512() -> bool:
    """Whether /proc/cpuinfo lists avx512f (as cmake/expected_kernel_path.cmake reads it)."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            return any(line.startswith("flags") and " avx512f" in line for line in cpuinfo)
    except OSError:
        return False


def peak_rss_mb() -> float:
    """VmHWM of this process. Not getrusage's ru_maxrss: Linux carries that over fork + exec, so a child of
    this (torch-laden) script would report at least the parent's size."""
    with open("/proc/self/status") as status:
        kib = next(int(l.split()[1]) for l in status if l.startswith("VmHWM:"))
    return kib / 1024


def torch_worker(s: Shape, batch: int, threads: int, args) -> None:
    """Body of one torch measurement, run in a fresh process; prints one JSON line."""
    torch.set_num_threads(threads)
    model = build_model(s, args.seed)
    inputs = make_inputs(s, batch, args.seed)
    times = []
    with torch.no_grad():
        for _ in range(args.warmup):
            model(*inputs)
        for _ in range(args.reps):
            start = time.perf_counter()
            model(*inputs)
            times.append((time.perf_counter() - start) * 1e3)
    print(json.dumps({"times_ms": times, "peak_rss_mb": peak_rss_mb()}))


def torch_train_worker(s: Shape, batch: int, threads: int, args) -> None:
    """One training step per rep (zero_grad, forward, cross-entropy, backward, AdamW), in train mode."""
    torch.set_num_threads(threads)
    model = build_model(s, args.seed, BertClassifier).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5, weight_decay=0.01)
    inputs = make_inputs(s, batch, args.seed)
    labels = torch.arange(batch) % 2

    def step():
        optimizer.zero_grad(set_to_none=True)
        F.cross_entropy(model(*inputs), labels).backward()
        optimizer.step()

    times = []
    for _ in range(args.warmup):
        step()
    for _ in range(args.reps):
        start = time.perf_counter()
        step()
        times.append((time.perf_counter() - start) * 1e3)
    print(json.dumps({"times_ms": times, "peak_rss_mb": peak_rss_mb()}))


def run_torch(s: Shape, batch: int, threads: int, core: str, args) -> Result:
    """PyTorch eager, eval, no_grad, torch.set_num_threads(threads), in its own process.

    `core` is the OpenBLAS kernel set (OPENBLAS_CORETYPE) torch's OpenBLAS loads: "env" keeps the
    inherited setting, anything else (e.g. SkylakeX, the AVX-512 kernels darkbert uses) overrides it, so
    torch gets the same BLAS kernels darkbert gets and its best setting is taken over both."""
    cmd = [sys.executable, __file__, "--_torch-worker", f"{batch},{threads}", *shape_args(s),
           "--seed", str(args.seed), "--warmup", str(args.warmup), "--reps", str(args.reps), "--mode", args.mode]
    env = dict(os.environ)
    if core != "env":
        env["OPENBLAS_CORETYPE"] = core
    label = f"{threads}/{env.get('OPENBLAS_CORETYPE', 'auto')}"
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        return Result("torch", label, batch, note=f"failed: {out.stderr.strip()[-300:]}")
    data = json.loads(out.stdout.strip().splitlines()[-1])
    return Result.from_times("torch", label, batch, data["times_ms"], data["peak_rss_mb"])


# ---------------------------------------------------------------------------------------------- onnx
def ensure_onnxruntime_node(cache: Path) -> Path:
    """npm install --ignore-scripts onnxruntime-node into the cache (its install script would fetch GPU
    binaries that cannot be reached; the CPU library ships in the package). Returns node_modules."""
    modules = cache / "node_modules"
    if (modules / "onnxruntime-node" / "package.json").exists():
        return modules
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("npm not found: cannot install onnxruntime-node")
    cache.mkdir(parents=True, exist_ok=True)
    if not (cache / "package.json").exists():
        (cache / "package.json").write_text('{"name": "darkbert-peers", "private": true}\n')
    print(f"installing onnxruntime-node into {cache} ...", flush=True)
    subprocess.run([npm, "install", "--ignore-scripts", "--no-audit", "--no-fund", "onnxruntime-node"],
                   cwd=cache, check=True)
    return modules


def export_onnx(s: Shape, args) -> Path:
    """torch.onnx.export of build_model(s, seed) with dynamic batch; cached by shape, seed and opset."""
    path = args.cache_dir / f"bert_{s.tag()}_seed{args.seed}_opset{ONNX_OPSET}.onnx"
    if path.exists():
        return path
    print(f"exporting {path} ...", flush=True)
    model = build_model(s, args.seed)
    names_out = ["last_hidden_state"] + [f"pattern_{l}" for l in range(s.layers)]
    names_in = ["input_ids", "attention_mask", "token_type_ids"]
    tmp = path.with_suffix(".onnx.tmp")
    with torch.no_grad():
        torch.onnx.export(model, make_inputs(s, 2, args.seed), str(tmp), input_names=names_in,
                          output_names=names_out, opset_version=ONNX_OPSET, do_constant_folding=True,
                          dynamic_axes={n: {0: "batch"} for n in names_in + names_out})
    tmp.rename(path)
    return path


def check_onnx_output(s: Shape, batch: int, dump: Path, args) -> str:
    """Max |difference| between ONNX Runtime's and torch's last hidden state and layer-0 pattern."""
    model = build_model(s, args.seed)
    with torch.no_grad():
        outputs = model(*make_inputs(s, batch, args.seed))
    ref_hidden, ref_pattern = outputs[0].numpy().ravel(), outputs[1].numpy().ravel()
    got = np.fromfile(dump, dtype="<f4")
    if got.size != ref_hidden.size + ref_pattern.size:
        raise RuntimeError(f"{dump}: expected {ref_hidden.size + ref_pattern.size} floats, got {got.size}")
    d_hidden = float(np.abs(got[: ref_hidden.size] - ref_hidden).max())
    d_pattern = float(np.abs(got[ref_hidden.size:] - ref_pattern).max())
    if d_hidden > 1e-3 or d_pattern > 1e-4:
        raise RuntimeError(f"ONNX Runtime output differs from torch: max |d hidden| {d_hidden:.2e}, "
                           f"max |d pattern| {d_pattern:.2e}")
    return f"matches torch (max |d| hidden {d_hidden:.1e}, pattern {d_pattern:.1e})"


def run_onnx(s: Shape, batch: int, threads: int, onnx_path: Path, modules: Path, args) -> Result:
    """ONNX Runtime (onnxruntime-node, CPU provider, graph optimisation 'all'), intra-op `threads`, via
    benchmarks/ort_runner.js in its own node process. The first run per batch also checks the outputs."""
    ids_path = args.cache_dir / f"input_ids_{s.tag()}_b{batch}_seed{args.seed}.bin"
    make_inputs(s, batch, args.seed)[0].numpy().astype("<i8").tofile(ids_path)
    dump = args.cache_dir / f"ort_out_{s.tag()}_b{batch}.bin"
    check = threads == args.threads[0]
    cmd = ["node", str(ORT_RUNNER), "--model", str(onnx_path), "--input", str(ids_path), "--batch", str(batch),
           "--seq", str(s.seq), "--threads", str(threads), "--warmup", str(args.warmup), "--reps", str(args.reps)]
    if check:
        cmd += ["--dump", str(dump)]
    env = dict(os.environ, NODE_PATH=str(modules))
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        return Result("onnx", str(threads), batch, note=f"failed: {out.stderr.strip()[-300:]}")
    data = json.loads(out.stdout.strip().splitlines()[-1])
    note = f"onnxruntime {data['ort_version']}"
    if check:
        note += "; " + check_onnx_output(s, batch, dump, args)
        dump.unlink()
    return Result.from_times("onnx", threads, batch, data["times_ms"], data["peak_rss_mb"], note)


# ---------------------------------------------------------------------------------------------- darkbert
def parse_key_values(text: str) -> dict[str, str]:
    """The last line of `text` holding key=value pairs, as a dict (e.g. 'ms_per_batch=80.1 gflops=279')."""
    for line in reversed(text.strip().splitlines()):
        pairs = [tok.split("=", 1) for tok in line.split() if "=" in tok]
        if pairs:
            return {k: v for k, v in pairs}
    return {}


def darkbert_env(args) -> dict[str, str]:
    """darkbert's environment: under --avx2 the avx2 path with OpenBLAS's Haswell kernels (set before the
    program starts, so it neither picks AVX-512 kernels nor restarts itself onto them)."""
    env = dict(os.environ)
    if args.avx2:
        env["DARKBERT_KERNEL"] = "avx2"
        env["OPENBLAS_CORETYPE"] = "Haswell"
    return env


def run_darkbert(s: Shape, batch: int, args) -> Result:
    """`darkbert bench forward|train-step ...` with its own thread setting; best and median ms per batch."""
    cmd = [str(args.darkbert), "bench", "forward" if args.mode == "forward" else "train-step", "--layers", str(s.layers), "--hidden", str(s.hidden),
           "--heads", str(s.heads), "--ff", str(s.ff), "--seq", str(s.seq), "--batch", str(batch),
           "--reps", str(args.reps)]
    if args.darkbert_kernel:
        cmd += ["--kernel", args.darkbert_kernel]
    if args.darkbert_threads:
        cmd += ["--threads", str(args.darkbert_threads)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, env=darkbert_env(args))
    except OSError as err:
        return Result("darkbert", "-", batch, note=f"failed: {args.darkbert}: {err.strerror}")
    values = parse_key_values(out.stdout)
    if "ms_per_step" in values:  # train-step names its times per step
        values["ms_per_batch"], values["median_ms_per_batch"] = values.pop("ms_per_step"), values.pop("median_ms")
    if out.returncode != 0 or "ms_per_batch" not in values:
        detail = (out.stderr.strip() or out.stdout.strip() or f"exit status {out.returncode}")[-300:]
        return Result("darkbert", "-", batch, note=f"failed: {' '.join(cmd[:3])}: {detail}")
    best = float(values["ms_per_batch"])
    median = float(values.get("median_ms_per_batch", "nan"))
    rss = float(values["peak_rss_mb"]) if "peak_rss_mb" in values else None
    note = " ".join(f"{k}={v}" for k, v in values.items())
    if rss is not None and rss >= 0.95 * peak_rss_mb():
        note += (f"; peak_rss_mb may be this script's own peak ({peak_rss_mb():.0f} MB): getrusage's ru_maxrss "
                 "is carried over fork + exec, VmHWM in /proc/self/status is not")
    return Result("darkbert", "-", batch, best, None if median != median else median, rss, [], note)


# ---------------------------------------------------------------------------------------------- report
def fmt(value, spec=".1f") -> str:
    return "n/a" if value is None else format(value, spec)


def print_table(results: list[Result], flops: float) -> None:
    header = (f"{'runner':<9} {'threads':>7} {'batch':>5} {'best ms/batch':>14} {'median ms/batch':>16} "
              f"{'best ms/seq':>12} {'median ms/seq':>14} {'GFLOP/s':>8} {'peak RSS MB':>12}")
    print(header)
    print("-" * len(header))
    for r in results:
        gflops = None if not r.ok() else flops / (r.best_ms_per_seq() / 1e3) / 1e9
        print(f"{r.runner:<9} {r.threads:>7} {r.batch:>5} {fmt(r.best_ms_per_batch):>14} "
              f"{fmt(r.median_ms_per_batch):>16} {fmt(r.best_ms_per_seq()):>12} {fmt(r.median_ms_per_seq()):>14} "
              f"{fmt(gflops, '.0f'):>8} {fmt(r.peak_rss_mb, '.0f'):>12}")
    print("\nthreads: torch = torch.set_num_threads(n) (OpenBLAS keeps its own pool, all cores unless "
          "OPENBLAS_NUM_THREADS is set); onnx = intra-op threads; darkbert = its own default")
    notes = [r for r in results if r.note]
    if notes:
        for r in notes:
            print(f"  {r.runner} threads={r.threads} batch={r.batch}: {r.note}")


def best_of(results: list[Result], runner: str, batch: int) -> Result | None:
    candidates = [r for r in results if r.runner == runner and r.batch == batch and r.ok()]
    return min(candidates, key=lambda r: r.best_ms_per_batch, default=None)


def print_ratios(results: list[Result], batches: list[int], args) -> None:
    what = ("AVX2 like-for-like: darkbert's avx2 path and torch, both on OpenBLAS Haswell kernels; "
            if args.avx2 else "")
    print(f"\nratio ({what}best ms per sequence; > 1 means darkbert is faster)")
    for batch in batches:
        torch_r, onnx_r, dark_r = (best_of(results, n, batch) for n in ("torch", "onnx", "darkbert"))
        parts = []
        for name, r in (("torch", torch_r), ("onnx", onnx_r)):
            if r is not None:
                parts.append(f"{name} best {r.best_ms_per_seq():.1f} ms/seq ({r.threads} thread"
                             f"{'s' if r.threads != '1' else ''})")
        parts.append(f"darkbert {fmt(dark_r.best_ms_per_seq()) if dark_r else 'n/a'}")
        ratios = []
        for name, r in (("torch", torch_r), ("onnx", onnx_r)):
            if r is not None:
                value = "n/a" if dark_r is None else f"{r.best_ms_per_seq() / dark_r.best_ms_per_seq():.2f}x"
                ratios.append(f"{name}/darkbert {value}")
        print(f"batch {batch}: {', '.join(parts)} -> {', '.join(ratios) or 'no peers run'}")


# ---------------------------------------------------------------------------------------------- main
def shape_args(s: Shape) -> list[str]:
    return ["--layers", str(s.layers), "--hidden", str(s.hidden), "--heads", str(s.heads), "--ff", str(s.ff),
            "--seq", str(s.seq), "--vocab", str(s.vocab)]


def parse_args(argv=None):
    cache_home = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    ints = lambda text: [int(x) for x in text.split(",") if x]
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mode", choices=["forward", "train-step"], default="forward",
                   help="time the forward pass (default) or one training step")
    p.add_argument("--batches", type=ints, default=[1, 8], help="comma-separated batch sizes (default 1,8)")
    p.add_argument("--threads", type=ints, default=[1, 2], help="peer intra-op thread settings (default 1,2)")
    p.add_argument("--torch-blas-cores", type=lambda t: t.split(","), default=["env", "SkylakeX"],
                   help="OpenBLAS kernel sets (OPENBLAS_CORETYPE) to run torch with; 'env' = inherited "
                        "(default env,SkylakeX: torch also gets the AVX-512 kernels darkbert selects)")
    p.add_argument("--reps", type=int, default=5, help="timed repetitions per setting (default 5)")
    p.add_argument("--warmup", type=int, default=2, help="untimed runs first (default 2)")
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--hidden", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--ff", type=int, default=3072)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--vocab", type=int, default=30522)
    p.add_argument("--seed", type=int, default=1234, help="weights and input ids (default 1234)")
    p.add_argument("--darkbert", type=Path, default=None,
                   help="darkbert binary (default build/examples/darkbert, else build/release/examples/darkbert)")
    p.add_argument("--cache-dir", type=Path, default=cache_home / "darkbert" / "peers",
                   help="onnxruntime-node, exported .onnx files, input ids (default ~/.cache/darkbert/peers)")
    p.add_argument("--avx2", action="store_true",
                   help="AVX2 like-for-like: darkbert's avx2 path and torch, both with OPENBLAS_CORETYPE=Haswell; "
                        "ONNX Runtime left out where the CPU has AVX-512 (see the top of this script)")
    p.add_argument("--darkbert-kernel", choices=["auto", "avx512", "avx2", "blas"], default=None,
                   help="darkbert's kernel path (`bench --kernel`; default: DARKBERT_KERNEL, else auto)")
    p.add_argument("--darkbert-threads", type=int, default=0,
                   help="darkbert's threads (`bench --threads`; default 0 = all cores). 1 beside --threads 1 "
                        "compares one core each, which a machine shared with other jobs distorts least")
    p.add_argument("--skip-torch", action="store_true")
    p.add_argument("--skip-onnx", action="store_true")
    p.add_argument("--skip-darkbert", action="store_true")
    p.add_argument("--json", type=Path, help="also write all results to this JSON file")
    p.add_argument("--_torch-worker", dest="torch_worker", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.hidden % args.heads != 0:
        p.error(f"--hidden {args.hidden} is not divisible by --heads {args.heads}")
    if args.reps < 1 or args.warmup < 0 or not args.batches or not args.threads:
        p.error("--reps must be >= 1, --warmup >= 0, --batches and --threads non-empty")
    if args.avx2:
        if args.darkbert_kernel not in (None, "avx2"):
            p.error("--avx2 runs darkbert on its avx2 path; drop --darkbert-kernel")
        args.darkbert_kernel = "avx2"
        args.torch_blas_cores = ["Haswell"]
    if args.darkbert is None:
        candidates = [REPO / "build" / "examples" / "darkbert", REPO / "build" / "release" / "examples" / "darkbert"]
        args.darkbert = next((c for c in candidates if c.exists()), candidates[0])
    return args


def main() -> int:
    args = parse_args()
    s = Shape(args.layers, args.hidden, args.heads, args.ff, args.seq, args.vocab)
    if args.torch_worker:
        batch, threads = (int(x) for x in args.torch_worker.split(","))
        (torch_worker if args.mode == "forward" else torch_train_worker)(s, batch, threads, args)
        return 0

    if args.mode == "train-step":
        args.skip_onnx = True  # no training in ONNX Runtime
    if args.avx2 and cpu_has_avx512() and not args.skip_onnx:
        print("--avx2 on an AVX-512 CPU: ONNX Runtime left out (it would run its AVX-512 kernels)")
        args.skip_onnx = True
    flops = flops_per_sequence(s) * (3 if args.mode == "train-step" else 1)  # backward = 2x the forward
    print(f"mode: {args.mode}; shape: {s}; {flops / 1e9:.2f} GFLOP per sequence; batches {args.batches}; "
          f"warm-up {args.warmup}, reps {args.reps}; torch {torch.__version__}; "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}, "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}; {os.cpu_count()} cpus")
    if not args.skip_darkbert:
        print(f"darkbert: {args.darkbert}" + (f", kernel path {args.darkbert_kernel}" if args.darkbert_kernel else "")
              + (f", {args.darkbert_threads} thread(s)" if args.darkbert_threads else "")
              + (", OPENBLAS_CORETYPE=Haswell" if args.avx2 else ""))
    blas_ok = True
    if not args.skip_torch:
        blas_ok = check_blas()

    results: list[Result] = []
    onnx_path = modules = None
    if not args.skip_onnx:
        args.cache_dir.mkdir(parents=True, exist_ok=True)
        modules = ensure_onnxruntime_node(args.cache_dir)
        onnx_path = export_onnx(s, args)
    for batch in args.batches:
        if not args.skip_torch:
            for core in args.torch_blas_cores:
                for threads in args.threads:
                    print(f"torch    batch {batch} threads {threads} OpenBLAS core {core} ...", flush=True)
                    results.append(run_torch(s, batch, threads, core, args))
        if not args.skip_onnx:
            for threads in args.threads:
                print(f"onnx     batch {batch} threads {threads} ...", flush=True)
                results.append(run_onnx(s, batch, threads, onnx_path, modules, args))
        if not args.skip_darkbert:
            print(f"darkbert batch {batch} ...", flush=True)
            results.append(run_darkbert(s, batch, args))
        else:
            results.append(Result("darkbert", "-", batch, note="skipped (--skip-darkbert)"))

    print()
    print_table(results, flops)
    print_ratios(results, args.batches, args)
    if not blas_ok:
        print("\n!!! WARNING: torch ran on the reference BLAS (see above); its numbers are meaningless. !!!")
    if args.json:
        args.json.write_text(json.dumps({"shape": asdict(s), "gflop_per_sequence": flops / 1e9,
                                         "results": [asdict(r) for r in results]}, indent=2) + "\n")
    failed = [r for r in results if r.note.startswith("failed")]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
