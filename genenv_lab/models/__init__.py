"""Model loading and adapters."""
