"""The help of every command, written like the README: what it does, an example, its inputs
and its outputs. (``\\b`` keeps click from rewrapping the paragraph after it.)"""

from __future__ import annotations

from tuner.engines import engine_names

TUNE = f"""Find the cheapest LLM-serving configuration that meets your SLOs.

\b
Example:
  tune --engine vllm --workload w.yaml --model ~/.cache/tuner/models/tiny-llama --trials 20

Inputs: an engine ({", ".join(engine_names())}), a workload YAML (the traffic, its SLOs and
the hardware's price: README "Workloads", experiments/workloads/ for examples) and the model
the engine serves. Trial 0 runs the engine's defaults; --trials launched configurations follow;
the best --remeasure-top and the defaults are measured again on fresh starts.

Outputs: a table of defaults against the best with intervals and the tuning delta, the best
launch command, and tune-runs/<study>/ (summary.json, best_config.yaml for tune measure
--config, launch_command.sh, study.db, MLflow, engine logs, records, plots). Exit codes: 0
done, 1 failure, 2 bad input (one line naming it), 130 interrupted.

The subcommands below bench a running server, compare engines, measure noise, fit workloads
and more; each has its own --help."""

WORKER = """Join a study from another host: take its trials until its budget is spent.

\b
Example:
  tune worker --study vllm-w --storage postgresql://tuner:PW@db:5432/tuner --parallel 8

Inputs: a study that tune created in a shared storage (everything about it comes from there);
this host's launcher, GPUs and output folder. Outputs: its trials in the study's storage and
MLflow, engine logs and records under --out."""

STATUS = """A study's trials (done, running where, failed), its best so far and the time left.

\b
Example:
  tune status --study vllm-w --storage postgresql://tuner:PW@db:5432/tuner

Inputs: the study's name and storage. Outputs: a table on the terminal; runs nothing."""

BENCH = """Replay a workload against a running server and report what it sustains.

\b
Examples:
  tune bench --endpoint http://127.0.0.1:8000 --workload w.yaml
  tune bench --endpoint http://127.0.0.1:8000 --workload w.yaml --find-capacity --json out.json

Inputs: the base URL of an OpenAI-compatible server (vLLM, SGLang, llama.cpp, TGI, ...) and a
workload YAML: model, classes (input and output token lengths), arrival (poisson, gamma,
constant, concurrency or trace), stop, slo, cost (README "Workloads"). --load, --duration and
--seed override the file's; prompts are fresh each run unless --epoch repeats them.

Outputs: latency percentiles (TTFT, ITL, TPOT, E2E), throughput, goodput, cost per million
tokens and the SLO verdict at the workload's load, or with --find-capacity every step and the
highest load meeting the SLOs with its bracket; --json writes every figure and the
per-request records beside it (out.records.csv). Exit 3 when no load met the SLOs."""

COMPARE = """Tuning delta vs engine delta: tune (or reuse) each engine, measure, report.

\b
Example:
  tune compare --engines vllm,llamacpp --workload w.yaml --model DIR --trials 8 --repeats 2

Inputs: engines, one workload, the model (one folder, or ENGINE=DIR each). Each engine's
study is run (or reused from --out), then its defaults and tuned best are measured again on
--repeats fresh starts each, interleaved. Outputs: a table, compare.json, report.md,
report.html with plots and an MLflow run, in --out/compare-<workload>/."""

MEASURE = """Start one configuration N times; print each capacity and cost, and their noise.

\b
Example:
  tune measure --engine vllm --workload w.yaml --model DIR --repeats 5

With --against, --repeats pairs of fresh starts of --config and of the other configuration,
interleaved (A B B A ...), and the verdict of the pairs at --resolution: "x beats y by 1.12x
(1.08-1.16), resolved at ±5%", "within ±5% of each other", or "unresolved"; exit 0 when
--config wins, 4 when it does not beat the other by more than the resolution, 5 unresolved.

\b
  tune measure --engine vllm --workload w.yaml --model DIR --config x.yaml --against defaults

measure.json is written after every start. "measure more pairs", or a run that was stopped:
the same command with --resume FOLDER and --repeats the total goes on from the starts the
folder holds (a lone start of a cut pair is measured again).

Inputs: an engine, a workload, the model and a configuration (the defaults, a YAML of knobs,
or a study's trial). Outputs: each start's capacity and cost, their mean, coefficient of
variation and 95% interval, and the runs under --out."""

REPORT = """Rebuild a comparison's report, or show a study's trade-offs (cost vs p95 TTFT/ITL).

\b
Examples:
  tune report --dir tune-runs/compare-w
  tune report --dir tune-runs/vllm-w
  tune report --storage postgresql://tuner@db:5432/tuner --study vllm-w

Inputs: a folder tune compare wrote (its inputs.json and studies), a study's folder, or a
shared study's storage (and its MLflow server, --tracking-uri).
Outputs: the comparison's report files again, or the study's Pareto front and
plots/pareto.png. Runs nothing."""

EXPORT = """Write a study's chosen configuration as what you deploy (checked before it is written).

\b
Examples:
  tune export --study tune-runs/vllm-w --format k8s --pick cheapest --out deploy.yaml
  tune export --storage postgresql://tuner@db:5432/tuner --study vllm-w --format docker

Inputs: a study's folder (or a shared study's name in --storage), a format and optionally a
point of its Pareto front. Outputs: the engine command line, a docker run line, Kubernetes
objects, Helm values or KServe resources, on standard output or in --out."""

CLEANUP = """Remove engines (processes and containers) that a killed tuner left behind; only ours.

\b
Example:
  tune cleanup

Inputs: none (engines carry an owner marker). Outputs: a line per engine removed."""

WORKLOAD_FIT = """Fit a workload (classes, lengths, arrivals, prefixes, sessions) to a request log.

\b
Example:
  tune workload fit --from requests.jsonl --out w.yaml

Inputs: a request log (OpenAI-style JSONL, a Mooncake trace, or CSV timestamp,input_tokens,
output_tokens). Outputs: the workload YAML, its fit report (w.fit.md) and plot (w.fit.png)."""

MAKE_MODEL = """Make a random-weight model: the project's tiny Llama, or a published shape.

\b
Examples:
  tune make-model --gguf
  tune make-model --shape smollm2-360m

Shapes (tuner/models/shapes/*.yaml, each with the source of its numbers): tiny-llama,
smollm2-135m, smollm2-360m, qwen2.5-0.5b. The tokenizer is trained here to the shape's exact
vocabulary size (reserved tokens fill it where the training text runs short; the folder's
tuner-recipe.json says how many). On random weights, token agreement measures numerical
drift, not answer quality.

Inputs: a shape and a seed. Outputs: a Hugging Face model folder (config, weights,
tokenizer), by default $TUNER_CACHE_DIR/models/<shape>, and with --gguf its GGUF variants
(Llama shapes)."""
