"""Algorithm 1: the co-evolution loop and its steps (the simulator's side of an epoch, the rewards of scored
rollouts, the loop's state, an epoch's statistics, held-out evaluation), and exporting what a run trained."""
