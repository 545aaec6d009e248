#!/bin/sh
VLLM_CPU_KVCACHE_SPACE=4 VLLM_USE_AOT_COMPILE=0 python -m vllm.entrypoints.openai.api_server --model /root/.cache/tuner/models/smollm2-135m --served-model-name smollm2-135m --host 0.0.0.0 --port 8000 --generation-config vllm --max-num-seqs 32 --max-num-batched-tokens 64 --long-prefill-token-threshold 32
