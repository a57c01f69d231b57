"""invlib: a tiny inventory library, the demo patch suite's source tree (bugs on purpose)."""
