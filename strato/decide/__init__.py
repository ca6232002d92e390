"""Governed decisions (`strato decide --governed`), compatible with vivary-strato 0.1.x.

The capsules and receipts that feed them are formats of tropo's graph
(`tropo.governed.capsule`, `tropo.governed.capsule_graph`, `tropo.governed.receipt`), so tropo
can build them and exo can verify them without importing strato."""
