"""A labelled retrieval set: 74 lessons, and requests phrased the way a user would.

Used by `bench/bench_retrieval.py` (recall of BM25, vectors and the hybrid; the
near-duplicate threshold) and the tests. Per lesson: a `Q:` paraphrase that avoids
the lesson's words (what vectors are for) and a `K:` request with the identifier or
error message in it (what BM25 is for). `REWORDED` restates 20 lessons in other
words (in `retrieval_reworded.py`): `learn` should merge those, never two distinct lessons.

Block format: a `key | domains` line starts each lesson, then `T:` trigger, `A:`
anti-pattern, `C:` correct pattern, `Q:`/`K:` queries; three leading spaces continue
the field above.
"""

from __future__ import annotations

import re
from typing import NamedTuple


class LabelledLesson(NamedTuple):
    """One target lesson and the request(s) that should retrieve it."""

    key: str
    domains: tuple[str, ...]
    trigger: str
    anti_pattern: str
    correct_pattern: str
    queries: tuple[str, ...]
    keyword_queries: tuple[str, ...] = ()


def parse_block(block: str) -> list[LabelledLesson]:
    """Parse the block format described in the module docstring."""
    items: list[LabelledLesson] = []
    for chunk in re.split(r"\n(?=[^\s:]+ \|)", block.strip()):
        head, *rest = chunk.split("\n")
        key, _, domains = head.partition("|")
        fields: list[tuple[str, str]] = []
        for line in rest:
            if line.startswith("   "):
                tag, text = fields[-1]
                fields[-1] = (tag, f"{text} {line.strip()}")
            else:
                tag, _, text = line.partition(":")
                fields.append((tag, text.strip()))
        first = {tag: text for tag, text in reversed(fields)}
        every = {tag: tuple(t for g, t in fields if g == tag) for tag in ("Q", "K")}
        items.append(
            LabelledLesson(
                key.strip(),
                tuple(domains.split()),
                first["T"],
                first["A"],
                first["C"],
                every["Q"],
                every["K"],
            )
        )
    return items


_LESSONS = r"""
da-mean-blanks | data_analysis
T: When computing the mean of a CSV column that has blank or N/A cells
A: calling float() on every cell, which crashes on empty strings
C: skip missing cells explicitly and divide by the count of parsed values
Q: average of a spreadsheet field where some entries are empty
K: ValueError: could not convert string to float: '' when averaging a column
da-group-sum | data_analysis
T: When summing a numeric column per category from a CSV file
A: adding the raw strings, which concatenates instead of summing
C: read with csv.DictReader, convert with float() and accumulate in a defaultdict(float)
Q: total revenue for each region from an exported table
K: csv DictReader sum per category gives concatenated strings
da-quoted-commas | data_analysis
T: When reading CSV rows whose quoted fields contain commas
A: splitting each line on ',' by hand
C: use the csv module, which handles quoting and embedded delimiters
Q: splitting breaks on addresses like "Paris, France" in the file
K: line.split(',') breaks on quoted CSV fields
da-median-even | data_analysis algo
T: When computing the median of a list with an even number of values
A: returning the single middle element after sorting
C: average the two middle elements, or use statistics.median
Q: the middle value is wrong when there are an even number of measurements
K: median of even length list returns wrong element
da-round-100 | data_analysis
T: When rounded percentages must still add up to 100
A: rounding every share independently
C: use the largest remainder method: floor all, then hand out the leftover points by largest
   fractional part
Q: shares shown in my report sum to 99 or 101
K: percentages do not add up to 100 after round()
da-local-day | data_analysis
T: When grouping event timestamps by calendar day for a local-time report
A: taking the date of the UTC timestamp
C: convert each timestamp to the report's time zone first, then take its date
Q: daily counts are off because events near midnight land on the wrong date
K: group events by date of a UTC timestamp lands on the wrong day
da-float-money | data_analysis python_general
T: When checking computed money totals for equality
A: comparing floats with ==
C: use decimal.Decimal for currency, or math.isclose with an explicit tolerance
Q: 0.1 + 0.2 check fails when verifying amounts in euros
K: float == comparison of currency totals fails, Decimal?
da-big-file | data_analysis python_general
T: When processing an input file larger than available memory
A: reading it whole with f.read() or readlines()
C: stream it: iterate over the file object line by line or read fixed-size chunks
Q: my script runs out of RAM on a 20 GB input
K: MemoryError calling f.read() on a huge file
da-jsonl-bad-line | data_analysis
T: When loading a JSON Lines file that may contain a malformed line
A: letting one json.loads error abort the whole load
C: parse line by line inside try/except, skip and count bad lines, report them at the end
Q: one corrupt record in an ndjson export aborts the entire import
K: json.decoder.JSONDecodeError halfway through a jsonl file
da-weighted-mean | data_analysis
T: When combining averages of groups that have different sizes
A: taking the plain mean of the group means
C: weight each group's mean by its size: sum(n_i * mean_i) / sum(n_i)
Q: overall score from per-class averages when classes have different numbers of students
K: mean of means gives the wrong overall average
da-pivot-missing | data_analysis
T: When pivoting records into a table where some combinations never occur
A: indexing the nested dict directly and hitting KeyError
C: collect all row and column keys first and fill absent cells with an explicit default
Q: cross tabulation crashes for product and month pairs with no sales
K: KeyError building a pivot table from a dict of dicts
re-log-fields | regex_parse
T: When extracting named fields from log lines with a regular expression
A: chaining str.split calls that break when a message contains spaces
C: compile one anchored pattern with named groups (?P<name>...) and use groupdict(); skip lines
   where match is None
Q: pull the timestamp and severity out of each server log entry
K: regex named groups groupdict for parsing log lines
re-dotall | regex_parse
T: When a regex must match text that spans several lines
A: relying on '.' which does not match a newline by default
C: pass re.DOTALL (re.S), or use [\s\S] for the spanning part
Q: my pattern does not find blocks that continue onto the next line
K: regex dot does not match newline, re.DOTALL
re-backtracking | regex_parse
T: When a regular expression with nested quantifiers becomes extremely slow
A: patterns like (a+)+ or (.*)* that backtrack exponentially
C: remove nested quantifiers, make alternatives mutually exclusive, or parse without regex
Q: the matcher hangs forever on certain long inputs
K: catastrophic backtracking makes re.match take minutes
re-match-vs-search | regex_parse
T: When re.match finds nothing although the text contains the pattern
A: using re.match, which only matches at the start of the string
C: use re.search to find it anywhere, or re.fullmatch to validate the whole string
Q: the expression finds nothing even though the word is in the middle of the text
K: re.match returns None but re.search finds it
re-date-formats | regex_parse data_analysis
T: When parsing dates that arrive in several formats
A: a single strptime format that raises ValueError on the others
C: try an explicit list of formats in order and report the value if none fits
Q: accept both 2024-01-31 and 31/01/2024 style strings
K: strptime ValueError: time data does not match format
re-backref | regex_parse
T: When a replacement string refers to a captured group
A: writing "\1" in a normal string literal, which becomes a control character
C: use a raw string r"\1" or the explicit form \g<1>
Q: substitution inserts a weird symbol instead of the text I captured
K: re.sub with "\1" inserts \x01 instead of the group
re-greedy | regex_parse
T: When extracting text between two delimiters that occur several times
A: a greedy .* that runs to the last closing delimiter
C: use a non-greedy .*? or a negated class like [^<]*
Q: grabbing the content of the first tag returns everything up to the last one
K: non-greedy .*? to match the first closing tag
re-multi-split | regex_parse python_general
T: When splitting a string on several different separators
A: chained replace() calls before a single split()
C: use re.split with a character class such as [,;\s]+ and drop empty pieces
Q: break a string apart on commas, semicolons or spaces at once
K: re.split on multiple delimiters comma semicolon
re-escape | regex_parse
T: When building a pattern from user-supplied literal text
A: interpolating the text raw, so characters like + ( ) . act as regex syntax
C: wrap the literal part in re.escape()
Q: searching for a filename like a+b(1).txt gives an error about the expression
K: re.error: nothing to repeat when the pattern contains user input
re-quoted-kv | regex_parse
T: When parsing key=value pairs where values may be double-quoted and contain spaces
A: splitting on spaces and then on '='
C: use shlex.split, or a regex with an alternative for "..." values
Q: config lines where some settings have blanks inside quotation marks
K: shlex.split key=value pairs with quoted values
sql-left-join-where | sql
T: When a SQL query must keep rows that have no match in the joined table
A: filtering the right-hand table in WHERE, which turns the LEFT JOIN into an INNER JOIN
C: use LEFT JOIN and put conditions on the right-hand table in the ON clause
Q: customers without any orders disappear from my results
K: LEFT JOIN behaves like INNER JOIN because of the WHERE clause
sql-having | sql
T: When filtering groups by an aggregate such as COUNT
A: putting the aggregate condition in WHERE
C: filter aggregated groups with HAVING after GROUP BY
Q: only show departments that employ more than five people
K: misuse of aggregate COUNT() in WHERE clause
sql-null-compare | sql
T: When selecting rows where a column is NULL
A: writing column = NULL, which is never true
C: use IS NULL / IS NOT NULL, or COALESCE for defaults
Q: rows with a missing manager never match my filter
K: WHERE manager_id = NULL returns no rows
sql-injection | sql python_general
T: When a SQL statement includes values that come from user input
A: building the statement with f-strings or string concatenation
C: use parameter placeholders (? or :name) and pass the values separately
Q: prevent attacks when the search term comes from a web form
K: sqlite3 execute with an f-string of user input, SQL injection
sql-count-star | sql
T: When counting rows of a table with COUNT
A: COUNT(column), which skips rows where that column is NULL
C: use COUNT(*) for rows; COUNT(column) only for non-null values
Q: my tally is lower than the number of records in the table
K: COUNT(column) and COUNT(*) give different numbers
sql-int-division | sql
T: When dividing two integer columns in SQLite
A: a / b on integers, which truncates to an integer
C: multiply by 1.0 or CAST one operand AS REAL before dividing
Q: the ratio column comes out as zero for every row
K: sqlite integer division returns 0
sql-not-in-null | sql
T: When excluding rows with NOT IN over a subquery
A: NOT IN against a subquery that can return NULL, which yields no rows at all
C: use NOT EXISTS with a correlated subquery, or filter NULLs out of the subquery
Q: exclusion based on another table returns an empty result when that table has blanks
K: NOT IN subquery with NULL values returns nothing
sql-top-n-group | sql
T: When selecting the top N rows within each group
A: a LIMIT on the whole query, or a correlated subquery per group
C: use ROW_NUMBER() OVER (PARTITION BY group ORDER BY value DESC) and keep rank <= N
Q: best three sellers in each category
K: ROW_NUMBER() OVER (PARTITION BY ...) top 3 per group
sql-order-multi | sql
T: When ordering query results by more than one column
A: sorting in Python afterwards or giving only one sort key
C: ORDER BY age DESC, name ASC with an explicit direction for each key
Q: sort people oldest first and then alphabetically
K: ORDER BY two columns, one DESC and one ASC
sql-bulk-insert | sql
T: When inserting many rows into SQLite
A: one execute and one commit per row
C: use executemany inside a single transaction and commit once
Q: loading 100k records one at a time takes forever
K: sqlite inserts are slow, executemany and commit once
sql-date-text | sql
T: When comparing dates stored as text in SQLite
A: storing dates as DD/MM/YYYY strings and comparing them
C: store ISO 8601 (YYYY-MM-DD) so string order equals time order, or use date()
Q: filtering records between two dates returns the wrong rows
K: sqlite compare dates stored as DD/MM/YYYY strings
cc-counter-lock | concurrency
T: When several threads update a shared counter
A: counter += 1 without synchronisation, which loses updates
C: guard the read-modify-write with a threading.Lock, or give each worker its own counter and
   sum at the end
Q: my total ends up lower than expected when incremented from worker threads
K: race condition on counter += 1 with threading
cc-deadlock-order | concurrency
T: When threads need to hold two locks at once
A: acquiring the locks in different orders in different threads
C: always acquire locks in one global order, or use a timeout and back off
Q: my program freezes forever when two workers grab resources
K: deadlock between two threading.Lock objects
cc-gil-cpu | concurrency python_general
T: When speeding up CPU-bound Python code with parallelism
A: using threads, which the GIL serialises for pure-Python work
C: use ProcessPoolExecutor or multiprocessing for CPU-bound work
Q: adding more threads does not make my number crunching any faster
K: ThreadPoolExecutor gives no speedup for CPU-bound work, GIL
cc-atomic-write | concurrency python_general
T: When writing a file that other processes read concurrently
A: writing in place, so readers can see a half-written file
C: write to a temporary file in the same directory, then os.replace() it over the target
Q: readers sometimes see a partially written output file
K: atomic file write with a temp file and os.replace
cc-future-errors | concurrency
T: When submitting tasks to a ThreadPoolExecutor
A: never calling result(), so exceptions raised in tasks are silently lost
C: call future.result() (or iterate as_completed) so worker exceptions are re-raised
Q: errors inside my pool jobs vanish without a trace
K: exception in ThreadPoolExecutor task is swallowed
cc-async-blocking | concurrency
T: When an asyncio coroutine needs to wait or do blocking I/O
A: calling time.sleep or blocking requests inside async def
C: await asyncio.sleep, use async libraries, or offload with asyncio.to_thread
Q: the event loop stalls while one coroutine is waiting
K: time.sleep inside async def blocks the event loop
cc-queue-shutdown | concurrency
T: When worker threads consume from a queue.Queue until the work runs out
A: workers blocking on get() forever once the producer is done
C: put one sentinel (None) per worker after the last item and have workers stop on it
Q: my consumers never exit after the input is exhausted
K: worker thread blocked forever on queue.Queue.get
cc-sqlite-threads | concurrency sql
T: When using SQLite from several threads
A: sharing one sqlite3 connection created in another thread
C: open one connection per thread, or serialise access behind a lock with
   check_same_thread=False
Q: database object created in one thread cannot be used from another
K: sqlite3.ProgrammingError: SQLite objects created in a thread can only be used in that
   same thread
cc-semaphore | concurrency
T: When limiting how many network requests run at the same time
A: starting every request at once
C: wrap each request in an asyncio.Semaphore or threading.BoundedSemaphore of size N
Q: allow at most four downloads in flight simultaneously
K: asyncio.Semaphore to limit concurrent requests
cc-daemon-exit | concurrency
T: When background threads must finish their work before the program exits
A: daemon=True threads, which are killed abruptly at interpreter exit
C: use non-daemon threads or join() them (with a stop event) before exiting
Q: background jobs get cut off when the script ends
K: daemon=True thread killed at interpreter exit
al-inclusive-range | algo python_general
T: When iterating over an inclusive range of integers
A: range(a, b), which stops before b
C: use range(a, b + 1) when both endpoints are included
Q: the loop processes one item too few when both ends should count
K: range(1, n) misses n
al-recursion-depth | algo
T: When traversing a very deep tree or graph recursively
A: plain recursion that hits the interpreter's recursion limit
C: rewrite as an iterative traversal with an explicit stack
Q: RecursionError when walking a hierarchy thousands of levels deep
K: RecursionError: maximum recursion depth exceeded in a DFS
al-memoize | algo python_general
T: When a pure function is called repeatedly with the same arguments
A: recomputing the expensive result every time
C: memoise with functools.lru_cache (or cache) on hashable arguments
Q: avoid redoing the same slow calculation for repeated inputs
K: functools.lru_cache for a slow recursive function
al-bisect | algo
T: When finding the position of a value in a sorted list
A: a hand-written binary search with off-by-one bounds that can loop forever
C: use the bisect module (bisect_left / bisect_right)
Q: locate where a number would go in an ordered sequence without an endless loop
K: bisect_left insertion point in a sorted list
al-chunks | algo python_general
T: When splitting a list into fixed-size batches
A: manual index bookkeeping that drops the last partial batch
C: slice with range(0, len(xs), n), or itertools.batched on Python 3.12+
Q: break an array into groups of 100 for batch processing
K: split a list into chunks of size n in python
al-dijkstra | algo
T: When finding shortest paths in a graph with weighted edges
A: plain breadth-first search, which ignores edge weights
C: use Dijkstra's algorithm with heapq for non-negative weights
Q: shortest route when roads have different lengths
K: heapq Dijkstra shortest path on a weighted graph
al-set-membership | algo python_general
T: When testing membership repeatedly against a large collection
A: x in some_list inside a loop, which is O(n) per test
C: build a set (or dict) once and test membership against it
Q: checking whether each item appears in a big list is painfully slow
K: x in list is O(n), use a set
al-sort-ties | algo
T: When sorting by one key descending and another ascending
A: two separate sorts in the wrong order, or reverse=True applied to both keys
C: sort with a tuple key such as (-score, name), or sort by the secondary key first since sorts
   are stable
Q: rank by points highest first but break ties by name A to Z
K: sort by score descending then name ascending with a key function
al-cycle-detect | algo
T: When ordering tasks that depend on each other
A: a DFS without cycle detection that recurses forever
C: use Kahn's topological sort; nodes left over at the end form a cycle, so report them
Q: jobs that require each other in a loop make my scheduler hang
K: topological sort with Kahn's algorithm to detect a cycle
al-merge-intervals | algo
T: When merging overlapping intervals
A: comparing every pair of intervals
C: sort by start, then extend the last merged interval while the next one overlaps
Q: combine booking periods that overlap into single blocks
K: merge overlapping intervals sorted by start
al-two-sum | algo
T: When looking for two numbers in a list that add up to a target
A: a nested loop over all pairs, which is quadratic
C: one pass with a dict from value to index, checking target - x before inserting x
Q: find a pair of prices that together match a budget exactly, quickly
K: two sum with a hash map in O(n)
sh-quote-vars | bash
T: When shell variables hold filenames that may contain spaces
A: unquoted $var, which the shell splits into several words
C: always double-quote expansions: "$var", "$@"
Q: my script breaks on files whose names contain blanks
K: bash unquoted $file breaks on spaces
sh-find-delete | bash
T: When deleting files by pattern in a directory tree
A: parsing ls output or using rm with a glob that misses subdirectories
C: use find DIR -type f -name '*.log' -delete (or -exec rm -- {} +)
Q: remove every .log file in all nested folders
K: find . -name '*.log' -delete
sh-strict-mode | bash
T: When a shell script must stop at the first failing command
A: the default behaviour of continuing after errors
C: start the script with set -euo pipefail
Q: my script keeps going after a command fails
K: set -euo pipefail in a bash script
sh-rename-ext | bash
T: When changing the extension of many files in a shell
A: mv *.txt *.md, which does not work
C: loop: for f in *.txt; do mv -- "$f" "${f%.txt}.md"; done
Q: turn all the .txt files in a folder into .md files
K: bash rename *.txt to *.md with mv
sh-read-lines | bash
T: When reading a file line by line in bash
A: for line in $(cat file), which splits on spaces and expands globs
C: use while IFS= read -r line; do ...; done < file
Q: loop over the rows of a text file without mangling backslashes and leading spaces
K: while IFS= read -r line loop in bash
sh-numeric-test | bash
T: When comparing numbers in a bash conditional
A: [[ $a < $b ]], which compares strings lexicographically
C: use (( a < b )) or [ "$a" -lt "$b" ]
Q: the if statement says 10 is smaller than 9
K: bash [[ $a < $b ]] compares numbers as strings
sh-cron-path | bash
T: When a command works interactively but fails under cron
A: relying on the interactive PATH and environment
C: use absolute paths, set PATH at the top of the crontab or script, and log stderr
Q: job works in my terminal but not when it runs on a schedule
K: command not found only in crontab, PATH
sh-xargs-null | bash
T: When passing file paths from find to another command
A: find | xargs, which splits names at whitespace
C: use find ... -print0 | xargs -0, or find -exec ... {} +
Q: paths handed to the next command get split into pieces
K: find | xargs with filenames containing spaces, -print0
sh-heredoc-quote | bash
T: When writing literal text with a heredoc
A: an unquoted delimiter, so $variables and backticks are expanded
C: quote the delimiter: cat <<'EOF' keeps the text literal
Q: dollar signs in the block of text I write to a file get substituted
K: cat <<EOF expands $variables in a heredoc
sh-sort-numeric | bash
T: When sorting lines by a numeric field in the shell
A: plain sort, which compares text so 10 comes before 9
C: use sort -n, with -k2,2n to pick the field and -t for the separator
Q: ordering lines by the number in the second column puts 10 before 9
K: sort -n -k2 on a numeric column
py-mutable-default | python_general
T: When a function has a default argument that is a list or dict
A: a mutable default such as def f(x=[]), which is shared across calls
C: default to None and create the list inside the function
Q: values from a previous call leak into the next call of my function
K: def f(items=[]) mutable default argument
py-optional-config | python_general
T: When loading a configuration file that may not exist
A: open() without handling FileNotFoundError
C: catch FileNotFoundError (or check Path.exists) and fall back to defaults
Q: load settings if the file is there, otherwise use built-in values
K: FileNotFoundError when the config file is missing, use defaults
py-dict-get | python_general
T: When reading keys from JSON data where some keys may be absent
A: indexing with d['key'], which raises KeyError
C: use d.get('key', default) and validate required keys explicitly
Q: KeyError when the API response sometimes lacks a field
K: KeyError on a JSON field, dict.get with a default
py-subprocess | python_general bash
T: When running an external command from Python and reading its output
A: os.system or shell=True with string concatenation
C: subprocess.run([...], capture_output=True, text=True, check=True) with a list of arguments
Q: call git from my program and read what it prints
K: subprocess.run capture_output to read git output
py-perf-counter | python_general
T: When measuring how long a piece of code takes
A: time.time() around one run
C: use time.perf_counter(), repeat the measurement and take the median, or use timeit
Q: benchmark a function accurately
K: time.perf_counter versus time.time and timeit
py-pagination | python_general
T: When an HTTP API returns results page by page
A: reading only the first page
C: loop while the response has a next cursor or link, accumulating items
Q: fetch all items when the endpoint returns only 100 at a time
K: API pagination with a next cursor loop
py-mutate-iterate | python_general
T: When removing items from a list while looping over it
A: calling list.remove inside a for loop over the same list, which skips elements
C: build a new list with a comprehension, or iterate over a copy
Q: deleting elements inside a for loop skips some of them
K: list.remove inside a for loop skips elements
py-late-binding | python_general
T: When creating closures or lambdas inside a loop
A: referring to the loop variable, which is bound late so all closures see the last value
C: bind the current value as a default argument (lambda i=i: ...) or use functools.partial
Q: all the callbacks I create in a loop use the final value
K: lambda in a loop captures the last value, late binding closure
py-encoding | python_general
T: When opening text files that may be read on other machines
A: relying on the platform default encoding
C: pass encoding='utf-8' (and errors= if needed) to open() explicitly
Q: UnicodeDecodeError reading a text file on a different computer
K: UnicodeDecodeError: 'charmap' codec, open with encoding utf-8
py-is-vs-eq | python_general
T: When comparing strings or numbers for equality
A: using is, which tests identity and depends on interning
C: use == for value equality; keep is for None and singletons
Q: an identity check on two equal strings sometimes returns False
K: is versus == for string comparison
py-bankers-round | python_general data_analysis
T: When rounding numbers that end in .5
A: expecting round() to round half up; it rounds half to even
C: use decimal.Decimal.quantize with ROUND_HALF_UP when half-up is required
Q: round(2.5) gives 2 instead of 3
K: python round half to even, ROUND_HALF_UP
"""


LESSONS: tuple[LabelledLesson, ...] = tuple(parse_block(_LESSONS))
"""74 labelled lessons; every query is a request that should retrieve its lesson."""
