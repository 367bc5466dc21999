"""The auditor's command line: verify the raw signed log offline, inspect rounds and books."""
