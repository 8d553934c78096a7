"""Learning: where lessons and skills are made.

- `reflection`: the Reflector (a failed trajectory → DIAGNOSIS + REVISED PLAN).
- `sink`: a reflection becomes a playbook lesson (`PlaybookSink`).
- `extraction`: a failed or struggled self-play cycle becomes a candidate lesson
  (`LessonExtractor`).
- `guard`: the generalization guard and the text helpers they share.

Import the submodules directly (`from nightschool.lessons.sink import PlaybookSink`);
this package module imports nothing, so importing one maker never loads the others.
"""

__all__: list[str] = []
