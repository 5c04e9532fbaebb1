"""The method's pure parts: types, the α-Curriculum Reward and its band, RWR's weights and losses, screening, the
efficiency ledger, a fixed set running dry, paired intervals, seeds. No I/O, no model, no package import above."""
