"""refapi's tests: a regular package, so that no installed package named `tests`
(sniffpy, which httplint needs, ships one) can shadow it."""
