"""Fixes: what each code's fix is (fixes), the planner that finds where it goes (fix_plan), and
applying planned fixes to files (fix_apply)."""
