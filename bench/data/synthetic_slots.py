"""Slot values of the synthetic distractor lessons of `bench/bench_retrieval.py`.

Per domain: 12 actions x 12 objects x 10 contexts x 7 pitfalls x 7 fixes
(70,560 combinations), combined by `synthetic_lessons` into trigger /
anti-pattern / correct pattern. Changing a value changes the generated lessons
(bump `GENERATOR_VERSION` there, which keys the embedding cache).
"""

from __future__ import annotations

SLOT_TEXT = """
data_analysis
actions: aggregating, filtering, joining, resampling, normalising, deduplicating, pivoting, ranking, bucketing, sampling, cleaning, summarising
objects: sensor readings, sales records, survey answers, log metrics, price series, inventory rows, click events, weather data, invoice lines, user profiles, exam scores, shipment records
contexts: from a CSV export, in a JSON dump, across monthly files, with missing values, with mixed units, from an Excel sheet, in a streaming feed, with duplicate keys, with outliers, by time window
pitfalls: assuming every row is complete, mixing string and numeric types, loading everything into memory, ignoring time zones, rounding too early, silently dropping malformed rows, trusting the header order
fixes: validate each row before use, convert types explicitly at the boundary, process the input as a stream, keep full precision until the final output, count and report skipped rows, normalise units before combining, sort the output so it is deterministic

regex_parse
actions: extracting, validating, tokenising, rewriting, splitting, matching, anonymising, scanning, capturing, normalising, stripping, classifying
objects: version strings, phone numbers, URLs, configuration keys, HTML attributes, timestamps, file paths, hashtags, currency amounts, IP addresses, markdown headers, error codes
contexts: in free text, line by line, in multiline documents, from mixed-language input, with optional parts, with nested brackets, case-insensitively, with unicode characters, in very long strings, from user input
pitfalls: a greedy wildcard, forgetting anchors, an unescaped dot, nested quantifiers, a hand-written split chain, assuming ASCII only, recompiling the pattern in a loop
fixes: anchor the pattern and use named groups, escape literal characters, precompile the pattern once, use a non-greedy or negated class, test the pattern on edge cases first, fall back to a real parser for nesting, enable the unicode-aware flags

sql
actions: querying, updating, aggregating, joining, paginating, migrating, indexing, deleting, upserting, ranking, archiving, auditing
objects: orders, customers, employees, transactions, products, sessions, comments, invoices, subscriptions, tickets, warehouses, payments
contexts: in SQLite, with NULL columns, across two tables, with a date range, inside a transaction, with a composite key, on a large table, with user-supplied filters, grouped by month, with window functions
pitfalls: string-formatted statements, a missing index, comparing with = NULL, filtering joined rows in WHERE, one commit per row, OFFSET paging on big tables, implicit integer division
fixes: bind parameters instead of formatting, add an index on the filtered column, use IS NULL for missing values, move join conditions into ON, batch writes in one transaction, page with a keyset on the last id, cast to REAL before dividing

concurrency
actions: sharing, updating, polling, scheduling, cancelling, throttling, batching, retrying, draining, locking, streaming, joining
objects: task queues, result caches, worker threads, subprocess pools, async HTTP calls, progress counters, log writers, database connections, file handles, timers, socket servers, background jobs
contexts: under heavy load, with asyncio, with threading, with multiprocessing, during shutdown, with timeouts, across processes, with shared state, with many producers, when a worker crashes
pitfalls: unsynchronised shared state, blocking calls on the event loop, locks taken in different orders, ignoring worker exceptions, unbounded queues, daemon threads dropping work, busy waiting
fixes: guard shared state with a lock, offload blocking work to a thread, acquire locks in one global order, collect each future's result, bound the queue and apply backpressure, join workers before exit, wait on an event or condition

algo
actions: searching, sorting, merging, traversing, counting, partitioning, scheduling, compressing, matching, caching, sampling, ordering
objects: intervals, graphs, trees, linked lists, matrices, strings, priority queues, sliding windows, prefix sums, permutations, dependency lists, coordinate pairs
contexts: with duplicates, in place, with negative numbers, at large scale, with ties, with an empty input, with cycles, within a time limit, with off-by-one bounds, with deep recursion
pitfalls: a quadratic nested loop, unbounded recursion, mutating while iterating, an off-by-one bound, ignoring the empty case, recomputing subproblems, an unstable comparison
fixes: use a hash map for lookups, switch to an explicit stack, iterate over a copy, write the loop invariant down, handle the empty input first, memoise subproblems, sort with a tuple key

bash
actions: renaming, archiving, searching, looping over, parsing, copying, scheduling, cleaning, monitoring, compressing, comparing, filtering
objects: log files, directories, CSV lines, environment variables, process lists, backup folders, git branches, download links, image files, config files, temporary files, user accounts
contexts: in a cron job, with spaces in names, recursively, over SSH, with GNU and BSD tools, in a pipeline, with set -e, in a Docker container, as root, with thousands of files
pitfalls: unquoted variables, parsing ls output, ignoring exit codes, relying on the interactive PATH, word splitting in for loops, unquoted heredoc delimiters, lexicographic number comparison
fixes: quote every expansion, use find with -print0, enable set -euo pipefail, use absolute paths, read lines with IFS= read -r, quote the heredoc delimiter, compare numbers with -lt or (( ))

python_general
actions: loading, serialising, validating, packaging, logging, testing, configuring, profiling, refactoring, importing, formatting, closing
objects: JSON payloads, dataclasses, command-line arguments, text files, dictionaries, generators, context managers, datetime values, environment settings, HTTP responses, module imports, exceptions
contexts: on Windows, in a library, in a long-running service, under Python 3.11, with type hints, in unit tests, with optional fields, in a CLI tool, with large inputs, with non-UTF-8 text
pitfalls: a mutable default argument, a bare except, identity comparison with is, late-bound loop variables, the platform default encoding, leaking open file handles, catching and ignoring errors
fixes: default to None and build inside, catch the specific exception, compare values with ==, bind loop values as defaults, pass encoding explicitly, use a with block, log and re-raise unexpected errors
"""
