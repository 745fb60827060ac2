"""Governance services: business rules as plain functions with keyword-only arguments."""
