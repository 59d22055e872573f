"""How the suite runs: layers and xdist groups from fixtures, children tied to their parent,
and the end-of-run check that nothing is left behind (see docs/testing.md)."""
