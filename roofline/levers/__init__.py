"""What a deployment can turn on: speculative decoding, offload, KV tiers and policies."""
