"""Generation and training engines: hf (transformers+peft+TRL), unsloth and vllm (GPU)."""
