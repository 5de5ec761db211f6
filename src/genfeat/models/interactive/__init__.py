"""Interactive, topic-controlled generation (thesis C §4): the option generator's topics (`topics`), a run's two
generators (`inference`) and the PPLM baseline (`pplm`); the conditional generator is `models.gpt` with
`cond_dim` > 0."""
