"""Lessons of the labelled set restated in other words: near-duplicates `learn` should merge.

Same block format as `retrieval_evalset` (domains and queries left empty); `key` names the
lesson of `retrieval_evalset.LESSONS` that each one restates.
"""

from __future__ import annotations

from .retrieval_evalset import LabelledLesson, parse_block

_REWORDED = r"""
da-group-sum |
T: When adding up a number field for each group in a CSV
A: concatenating the text values instead of summing numbers
C: parse rows with csv.DictReader, float() the value and sum into defaultdict(float)
da-big-file |
T: When a data file is too big to load into memory at once
A: calling read() or readlines() on the whole file
C: iterate over the file object line by line or process it in chunks
re-dotall |
T: When a regular expression has to match across line breaks
A: expecting '.' to match newline characters
C: compile with the re.S / re.DOTALL flag
re-greedy |
T: When capturing text between repeated delimiters with a regex
A: greedy .* which swallows up to the final delimiter
C: make the quantifier lazy with .*? or use a negated character class
re-escape |
T: When a regex pattern includes literal text typed by the user
A: inserting the text unescaped so metacharacters change the pattern
C: escape the literal text with re.escape first
sql-left-join-where |
T: When a LEFT JOIN must keep rows without a matching row
A: a WHERE condition on the joined table, which drops the unmatched rows
C: move conditions on the joined table into the ON clause of the LEFT JOIN
sql-null-compare |
T: When a SQL filter tests for missing values
A: comparing with = NULL which never matches
C: test with IS NULL or IS NOT NULL
sql-injection |
T: When user-provided values go into a SQL query
A: formatting them into the SQL string
C: bind them as query parameters with placeholders
sql-bulk-insert |
T: When writing a large number of rows to SQLite
A: committing after every single insert
C: insert them with executemany in one transaction
cc-counter-lock |
T: When multiple threads increment the same shared variable
A: unsynchronised += that loses increments
C: protect the increment with a threading.Lock
cc-atomic-write |
T: When other processes may read a file while it is being written
A: overwriting the file in place
C: write a temporary file next to it and os.replace it into place
cc-async-blocking |
T: When code inside async functions blocks or sleeps
A: time.sleep and blocking calls in coroutines
C: use await asyncio.sleep or run blocking work with asyncio.to_thread
al-inclusive-range |
T: When looping over integers from a to b including b
A: range(a, b) which excludes the upper end
C: iterate over range(a, b + 1)
al-memoize |
T: When an expensive pure function gets the same inputs again and again
A: recalculating the result on each call
C: cache results with functools.lru_cache
al-set-membership |
T: When checking membership many times in a big collection
A: repeated `in` tests against a list
C: convert the collection to a set once and test against the set
sh-quote-vars |
T: When bash variables contain file names with spaces
A: leaving $var unquoted so it is word-split
C: put double quotes around every expansion like "$var"
sh-strict-mode |
T: When a bash script should abort as soon as a command fails
A: letting the script continue after an error
C: enable set -euo pipefail at the top
py-mutable-default |
T: When a Python function uses a list or dict as a default value
A: def f(items=[]) which keeps state between calls
C: use None as the default and build a fresh list in the body
py-late-binding |
T: When lambdas defined in a loop capture the loop variable
A: late binding so every lambda sees the last value
C: capture the value with a default argument like lambda i=i
py-encoding |
T: When reading text files whose encoding might differ across systems
A: trusting the locale's default encoding
C: open files with encoding='utf-8' explicitly
"""

REWORDED: tuple[LabelledLesson, ...] = tuple(parse_block(_REWORDED))
"""20 lessons of `LESSONS` restated in other words (same `key`, no queries)."""
