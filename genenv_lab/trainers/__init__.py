"""The updates of the method's two roles, built from the kit an engine lends (model, adapters, optimiser)."""
