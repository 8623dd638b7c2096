"""One replica, one batch, no traffic: ops, op times, prefill/decode, memory, plan, sweep."""
