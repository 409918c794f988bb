"""Linear algebra under the strategies: factorizations that grow and shrink, projections onto rows,
feasible points, BLAS helpers and thread control."""
