# A vLLM deployment as a user might run it today, for `tune --baseline`: read back with the
# flags of engines/vllm.yaml (tuner/engines/command_line.py); the model path and the port are
# launch flags, not knobs, and are skipped.
vllm serve ~/.cache/tuner/models/tiny-llama --port 8000 \
  --max-num-seqs 32 --max-num-batched-tokens 512 --no-enable-prefix-caching
