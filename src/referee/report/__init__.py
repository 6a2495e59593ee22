"""Reports of graded runs: JUnit XML for CI systems, the console table, the HTML report."""
