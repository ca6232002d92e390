"""The schema and the check: configs, frontmatter, documents, findings and the
workspace graph they make, read through the repository layer."""
