"""The claim reader's vocabulary: one named pattern per cue family, generic to any agent's final report.

Families (DESIGN.md "Claim reader"): a *delivered result* and a *completion statement* are success
claims; an *obstacle* (failure, inability, refusal, partial work, a blocked page) and *future work*
(a plan, work announced for later) are failure_or_incomplete; a *question back*, a *hedge*,
*courtesy only*, an *empty* report and *no status* are unclear.
"""

from __future__ import annotations

import re

from referee.core.caseless import Cue as Cue  # re-exported: the cues' pattern type

FAMILY_LABEL: dict[str, str] = {
    "delivered_result": "success", "completion": "success",
    "obstacle": "failure_or_incomplete", "future_work": "failure_or_incomplete",
    "question_back": "unclear", "hedged": "unclear", "courtesy_only": "unclear", "empty": "unclear",
    "no_status": "unclear",
}


# Courtesy sentences carry no status: they are removed before reading ("Anything else?" asks nothing).
COURTESY = Cue(
    r"(anything else|any(thing)? (more|further)|further (assistance|questions|help)|more questions|"
    r"feel free|let me know if|don't hesitate|do not hesitate|you'?re welcome|happy to help|glad (i|to) "
    r"(could )?(help|assist)|have a (great|nice|good|wonderful|safe|pleasant|fantastic|lovely|excellent|terrific|amazing)|"
    r"safe travels|enjoy your|thank you for (contacting|your "
    r"patience|choosing|reaching|understanding)|is there anything|if you (need|have)|take care|best regards|"
    r"^(thank you|thanks)[.!]*$|^(hello|hi)[.!,]*$|get well soon|^no problem|"
    r"(terminate|end|conclude|close|wrap up|finali[sz]e) (the|this|our) (conversation|session|chat|discussion)|"
    r"^terminate\W*$)", re.I)

# The agent says it did not, could not or may not do the work (not: a negative *answer* about the world).
OBSTACLE = Cue(
    r"\b((i|we)( still| currently)? (could ?n[o']t|can ?n[o']t|can't|cannot|was ?n[o']t able|were ?n[o']t able|am unable|are unable|"
    r"was unable|were unable|have ?n[o']t been able|did ?n[o']t manage|do ?n[o']t have (access|permission)|"
    r"had no (access|way)|ran out of|did ?n[o']t manage|can only (offer|provide|give|suggest))|unable to|"
    r"(my|our) (options|hands|ability|abilities) (are|is) (limited|tied|restricted)|"
    r"\b(failed|fails|declined|rejected|crashed|errored|refused)\b|^\W*(error|failure|fail)\b|"
    r"\bstill (fail|failing|crash|crashing|broken|erroring)\b|"
    r"(i|we) did ?n[o']t (cancel|book|change|modify|update|delete|remove|send|create|make|process|refund|"
    r"upgrade|apply|submit|fix|resolve|save|order|pay|add)\b|not able to|failed to|fails to|"
    r"did ?n[o']t manage to|(there (was|is|were|are) (still )?(an? )?(error|issue|problem)s?\b)|"
    r"(was|were|is|are)(n't| not) (found|located|retrieved|printed|loaded|accessible|available)\b|"
    r"i (would )?(recommend|suggest) (contacting|reaching out|checking with|calling|speaking|consulting)|"
    r"unfortunately|not possible|impossible|not permitted|not allowed|not eligible|"
    r"i'?m (very )?sorry,? but|i apologi[sz]e,? but|no longer available|"
    r"did ?n[o']t (work|succeed|go through|load|finish|complete|save|pass)|does ?n[o']t (work|load|seem to work)|"
    r"unsuccessful|(an )?error (occurred|was returned|prevented)|ran into (an? )?(error|issue|problem)|"
    r"(transfer|escalat)\w* (you )?to (a )?(human|live|another) (agent|representative|support)|"
    r"gave up|give up|nothing (was|were|has been|got) (changed|done|saved|deleted|removed|sent|updated|created|"
    r"cancell?ed|booked|modified|submitted|fixed)|"
    r"(blocked|denied) (my |the )?access|access (was |is )?(blocked|denied|restricted)|captcha|"
    r"(page|site|website|server|request|download|command) (did not|didn't|does not|failed to|could not|would not) "
    r"(load|respond|open|work|complete)|timed? ?out|try again later|infeasible|"
    r"(has|have|was|were|is|are)(n't| not) (yet )?(been )?(yet )?(successfully )?(completed|done|made|cancell?ed|"
    r"booked|updated|changed|modified|processed|applied|saved|submitted|fixed|resolved|sent|created|deleted)\b|"
    r"not (yet )?(been )?completed|"
    r"\bnot (fully |quite |entirely )?(done|complete|finished|successful|saved|applied)\b|"
    r"partial(ly)?( (done|complete|completed|success|fix))|only (some|part) of|not all of|"
    r"(still|yet to be) (need|needs|pending|unresolved|failing)|remaining (items?|steps?|tasks?|work)\b)", re.I)

# The agent's own inability, the one obstacle that outweighs a submitted piece of work.
INABILITY = Cue(r"\b((i|we) (could ?n[o']t|can ?n[o']t|can't|cannot|was unable|were unable|am unable|"
                       r"was ?n[o']t able|were ?n[o']t able)|unable to|not able to)\b", re.I)

# Partial work: some of what was asked, not all of it.
PARTIAL = Cue(
    r"\b(partial(ly)?|some of (the|your)|not all|only (some|part|one of)|but not (the|all|any)\b|except (for )?(the|one|two)|"
    r"still (need|needs|have to|has to|pending|remain)|the rest (of|is|are|will)|half (of|way))", re.I)

# Waiting on the user's input: a sentence saying so is work for later, and never mere courtesy.
_WAITS_ON_YOU = r"(when|whenever|once|as soon as) you (have|get|find|provide|are ready with|send)"

# Work announced for later, or a plan instead of a result.
FUTURE_WORK = Cue(
    r"\b((i|we)('ll| will| shall| am going to|'m going to| need to| have to| must| should) (now |first |next |then )?"
    r"(start|begin|proceed|look|check|verify|search|find|collect|gather|try|investigate|analy[sz]e|review|examine|"
    r"run|visit|open|navigate|read|fetch|explore|continue|attempt|work|implement|create|write|fix|test|confirm|"
    r"go|take|perform|use|reach|access|need|revise|modify|enhance|refine|debug|re-?run|adjust|improve|rewrite|"
    r"calculate|compute|extract|filter|identify|determine|download|scrape|parse|inspect|print)|"
    r"(i|we) need to (first )?(refine|revise|fix|modify|try|find|check|verify|look|get|obtain|access|ensure)|"
    r"let me (now |first |next )?(start|begin|check|verify|look|search|find|try|investigate|examine|run|visit|open|"
    r"review|analy[sz]e|continue|see|gather|collect|fetch|perform|re-?run|retry|revise|modify|refine|enhance|try|"
    r"manually|debug|adjust|rewrite|fix|calculate|compute|extract|filter|identify)|"
    r"let'?s (now |first |next )?(start|begin|proceed|check|verify|look|search|find|try|investigate|examine|run|"
    r"visit|open|review|analy[sz]e|continue|gather|collect|perform|re-?run|retry|confirm|cross-?(check|reference))|"
    r"next,? (i|we)('ll| will)|(the )?next step (is|will be|would be)|first,? (i|we) need|to be continued|"
    r"in progress|once (i|we|you) (have|get|find|receive|gather|provide|access|are ready)|please (hold on|wait|stand by)|"
    rf"{_WAITS_ON_YOU}|(i|we)('ll| will| would) need (the|your|to know|"
    r"more|some|additional)|(i|we) need (the|your) |to proceed (with \w+ )?(i|we) need|"
    r"(i|we) (still )?need (more|additional|further) (information|data|time|details)|"
    r"(we|i) can (now )?proceed (with|to) (the )?next|next steps? (to|is|are|will)|please follow (the|these)|"
    r"(to be done|do this|be found|find \w+|check \w+|look \w+|verify \w+) manually|manually (find|check|verify|search|"
    r"inspect|look|review|identify))\b", re.I)

# Sentences that await the user's input are never courtesy, whatever polite words they carry.
AWAITING = Cue(rf"\b({_WAITS_ON_YOU}|once (i|we) (have|get|receive))\b", re.I)

# Handing the decision back: a request to confirm or choose before acting.
QUESTION_BACK = Cue(
    r"\b(would you like( me)? to|do you want( me)? to|shall i|should i|can you (please )?(confirm|provide|tell)|"
    r"could you (please )?(confirm|provide|tell|let me know|specify|clarify|share)|please (confirm|provide|specify|"
    r"let me know (which|what|if you|whether|how)|clarify|choose|select|share)|which (one|option) would you|"
    r"(are you|is that) (sure|correct|ok|okay)|do you confirm|may i proceed|proceed\?|let me know (which|what|how|"
    r"when you|whether))", re.I)

HEDGE = Cue(
    r"\b(i think|i believe|i assume|i guess|probably|possibly|perhaps|might|may have|should (now )?be|"
    r"(seems?|appears?)\b(?! (to be )?(correct|accurate|right|valid|complete|fine)\b)( to)?|hopefully|likely|not (entirely |completely )?sure|unsure|uncertain|"
    r"unclear|if (i|it) (understood|worked)|as far as i (can tell|know)|to the best of my|plausible|"
    r"(could|may) (be|have)|it is possible that)", re.I)

DONE_VERBS = (r"booked|reserved|cancell?ed|updated|created|deleted|removed|sent|added|modified|changed|set|saved|"
              r"completed|done|processed|issued|upgraded|downgraded|transferred|scheduled|submitted|refunded|"
              r"applied|enabled|disabled|turned (on|off)|renamed|moved|archived|confirmed|recorded|registered|"
              r"installed|configured|fixed|resolved|posted|replied|forwarded|shared|uploaded|written|edited|"
              r"exchanged|returned|paid|purchased|ordered|placed|credited|compensated|merged|copied|cleared|"
              r"granted|finished|accomplished|generated|published|activated|deactivated|adjusted|corrected|"
              r"implemented|addressed|patched|refactored|verified|identified|found|calculated|determined|"
              r"retrieved|located|extracted|computed|collected|solved|answered|completed successfully|checked|reviewed|"
              r"searched|looked up|validated|bought|marked|labell?ed|tagged|assigned|approved|invited|subscribed|"
              r"unsubscribed|restored|rescheduled|renewed|reset|muted|unmuted|pinned|starred|flagged")
COMPLETION = Cue(
    rf"\b(successfully|all set|all done|done\s*[,.!:\-–—]|task (is |has been )?(now )?(complete|completed|done|finished|"
    rf"resolved|accomplished)|(has|have|had) (now )?been ({DONE_VERBS})|(was|were|is|are|is now|are now|now) "
    rf"({DONE_VERBS})\b|(i|we)('ve| have| just| now)? ({DONE_VERBS})\b|i'?ve (gone ahead|taken care)|taken care of|"
    rf"(is|are) (now )?(confirmed|in place|complete|active|live|on|off)\b|confirmation (number|code|id)|"
    rf"(ready|going) to submit|(i'?ll|i will|let me|now) submit|submitting (the|my|our)|final (output|submission)|"
    rf"(request|task|issue|problem|bug) (is|has been) (now )?(satisfied|fulfilled|solved|resolved|fixed|addressed)|"
    rf"(looks|is|are|seems) (all )?(good|correct|right|fine|as expected)\b|(i|we) can confirm|(exactly )?as expected|confident in (my|the|our) "
    rf"(solution|fix|answer|result)|(i|we) (agree|confirm) (with )?(the )?(verification|result|answer|findings)|"
    rf"(?:^|(?<=[.!?]\s))(?:successfully )?(?:{DONE_VERBS})\b(?! (?:by|from|with|in|on|at|for|to)\b)|"
    # a terse sentence of its own, a subject of one to three words and the verb: "Quantity set.", "Order placed!"
    rf"(?:^|(?<=[.!?]\s))(?!(?:no|not|nothing|none|never)\b)[A-Za-z][\w'-]*(?: [\w'-]+){{0,2}} "
    rf"(?:{DONE_VERBS})\s*[.!]+\s*$)", re.I | re.M)

# The result itself: an answer sentence, a value, a list or "here is".
DELIVERED = Cue(
    r"\b(final answer|the answer|answer is|final result|result is|results are|here (is|are) (the|your) (final )?(answer|"
    r"results?|summary|details|list|information|total|breakdown|numbers?)|the (total|number|count|sum|value|amount|price|"
    r"cost|name|date|address|winner|result|output|answer)s? (is|was|are|were|comes to)|(is|are|was|were) as follows|"
    r"you can (take|bring|use|have|get)|^\s*yes\b|^\s*no\b(?! problem))", re.I | re.M)

# The final command of a report that submits the work (a submit script, `git commit`, a final-output marker).
SUBMIT_COMMAND = re.compile(r"(?<![A-Za-z])submit(?![a-z])|final[_ ]output|\bgit commit\b", re.I)

# A terminal call written as the report: FINISH([...]), submit("42"), send_msg_to_user('...').
TERMINAL_CALL = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*\((.*)\)\s*;?\s*$", re.S)
ANSWER_CALLS = frozenset("finish final_answer answer submit submit_answer respond respond_to_user send_msg_to_user "
                         "reply_to_user return_answer done stop exit".split())
INFEASIBLE_CALLS = frozenset("report_infeasible infeasible give_up giveup fail abort".split())
FINAL_ANSWER = re.compile(r"^\s*(final answer|answer)\s*[:：]\s*(.+)$", re.I | re.S)
CODE_BLOCK = re.compile(r"```[\w+-]*+\n?(.*?)```", re.S)  # possessive: a fence and 100,000 letters is one scan
LEAD_IN = re.compile(r"^\s*(thought|reasoning|analysis|final report|summary|report)\s*:\s*", re.I)

# --- Which obstacle cues still stand beside a completion claim (claim/context.py reads these) -------------------
# Every shipped policy passes `failure_or_incomplete`, so a word must not turn a completion claim into one: only a
# *stated* obstacle (the agent's own inability, work left undone, a referral elsewhere) does. An obstacle *word*
# (failed, error, captcha, timed out, unfortunately, cannot be restored ...) that the context does not explain away
# leaves the claim unclear. Each pattern below is matched at a known place, on at most a few dozen characters: plain
# `re.I` patterns (a Cue's lowered copy pays off on long texts only).

# Matched at the start of an OBSTACLE / _CANNOT_BE match (and a few characters after it): a stated obstacle.
STATED_OBSTACLE = re.compile(
    r"(i|we)\b(?!'?m (very )?sorry| apologi)|unable to|not able to|did ?n[o']t manage|(my|our) (options|hands|ability)|"
    r"still (fail|failing|crash|crashing|broken|erroring|need|needs|pending|unresolved)|yet to be|"
    r"(transfer|escalat)|gave up|give up|nothing (was|were|has been|got)|i (would )?(recommend|suggest)|"
    r"not (yet )?(been )?completed|not (fully |quite |entirely )?(done|complete|finished)\b|partial|remaining|"
    r"(has|have|was|were|is|are)(n't| not) (yet\b|(been )?(completed|done|finished)\b)|"
    r"did ?n[o']t (work|succeed|go through|finish|complete)\b|does ?n[o']t (work|seem to work)\b", re.I)

# Matched at the start of a PARTIAL match: partial work stated as such ("two of them but not the third").
STATED_PARTIAL = re.compile(
    r"partial|only (some|part)\b|still |but not (all|the (rest|remaining|second|third|fourth|fifth|last))\b", re.I)

# A word that negates what follows it in its clause ("nothing failed", "none of the tests failed", "0 errors").
NEGATORS = frozenset("no not nothing none never zero 0 without neither nor nobody".split())
# ... or a tally after it ("Failed: 0", "errors: none", a table's "| failed | 0 |").
TALLY_OF_NONE = re.compile(r"\s?[:=|] ?(none|0|zero|no|n/a)\b", re.I)

# Where a clause ends, for reading a cue's own clause ("no errors, nothing failed"; "it failed and I stopped").
CLAUSE_BREAK = re.compile(r"[,;:()\[\]]|[—–] | - |\b(and|but|so|then|while|though|although|however|yet|because|"
                          r"whereas)\b", re.I)
# A hypothetical: "if anything fails, ...", "in case it times out".
HYPOTHETICAL = frozenset("if unless whether should".split())

# What follows an obstacle cue and makes it no obstacle: idioms ("I could not have asked for ...", "I couldn't be
# happier"), finding nothing wrong ("I could not find any errors", "I can no longer reproduce the bug"), an
# after-effect of the work ("I cannot undo that") and things left alone ("I did not delete anything else").
EXPLAINED_AFTER = re.compile(
    r"\W{0,2}(to )?(have )?(asked for|been (happier|better|more)|be (happier|better|prouder|more|easier|smoother|pleased|"
    r"gladder)|agree more|wait\b|complain|thank you enough|stress (this |it )?enough|recommend (it|this|them) enough|"
    r"(find|see|spot|detect|notice|identify) ((any|a single|a|an) )?((other|remaining|further|more|new|obvious|real|"
    r"actual|outstanding|open|leftover) )?(problems?|issues?|errors?|faults?|bugs?|failures?|anything (wrong|amiss))\b|"
    r"reproduce ((it|this|that)\b|((any|the|a|an|that|this) )?((original|reported|same) )?(bugs?|issues?|errors?|"
    r"failures?|problems?|crash(es)?)\b)|think of (anything|something) (else|more)\b|"
    r"break (it|this|that|anything)|make it fail|"
    r"(undo|reverse|revert|restore|recover|un-?delete) (it|this|that|them|the (deletion|change|changes|removal))\b|"
    r"bring (it |this |that |them )?back|"
    r"(\b\w++ )?(anything|something|nothing) (else|more)\b|wrong\b|amiss|incorrectly|by mistake)", re.I)
# "Nothing failed apart from the delete", "no step failed except X": the negation has an exception, which failed.
EXCEPTION_AFTER = re.compile(r"\s{1,3}but\b|,?\s{1,3}(apart from|except|other than|save for|besides|excluding)\b", re.I)
# A sentence that opens with an earlier time or a condition ("Earlier, I could not find it", "Should you need it
# back, I cannot help"): its obstacle is not the agent's present failure to do the task, only a word. Matched on
# the sentence up to the cue: the opening clause, its comma, and at most a subject ("I'm") before the cue.
EARLIER_OR_IF_OPENING = re.compile(r"\W{0,4}(earlier|previously|at first|initially|originally|before that|if|should|"
                                   r"in case|unless)\b[^,;:.!?\n]{0,60},[^,;:.!?\n]{0,12}$", re.I)
# ... but a referral stays stated under a condition ("If you have further concerns, I recommend contacting ...").
REFERRAL = re.compile(r"(i|we) (would )?(recommend|suggest)|(transfer|escalat)", re.I)
# ... and a condition about getting the work undone is an after-effect of it ("if you want it back, I can't").
UNDOING = re.compile(r"\b(back|undo|undone|restored?|recover(ed)?|revert(ed)?|reversed?|un-?deleted?)\b", re.I)
# A stated obstacle about *other* things ("I did not modify any other files") only names them: a word, not a claim.
ABOUT_OTHERS = re.compile(r"\W{0,2}((any|the|some|all|two|three) )?others?\b", re.I)
# "Unfortunately for the file, it is now gone": the misfortune is the object's, not a person's.
UNFORTUNATE_FOR = re.compile(r"\W{0,2}for (?!(you|your|us|me|the (user|customer|client|passenger|traveller|traveler|guest|"
                             r"member)s?)\b)\w", re.I)

# The obstacle is overcome in its own clause: "captcha solved", "the error was fixed".
OVERCOME = re.compile(r"\b(solved|resolved|fixed|cleared|bypassed|overcome|handled|dismissed|passed|got (past|around|"
                      r"through)|worked around|restarted|repaired|recovered|working again|back up|(now|again) (passe?s?|"
                      r"works?|succeeds?|runs?)|passing now)\b", re.I)
# About an earlier attempt ("earlier attempts timed out", "it failed at first") ...
EARLIER_ATTEMPT = re.compile(r"\b((earlier|previous|prior|first|initial|older|original) (attempts?|tries|try|runs?|calls?|"
                             r"requests?|iterations?|passes|quer(y|ies)|commands?|approach(es)?)|at first|initially|"
                             r"the first time|(on|after|with|before) (a |the |one )?retr(y|ies|ying)|transient(ly)?|"
                             r"intermittent(ly)?)\b", re.I)
# ... or recovered from later in its sentence ("..., the last one worked", "then worked on retry").
RECOVERED = re.compile(r"\b((worked|succeeded|went through|passed) (on|after|with) (a |the )?retr|(last|final|next|second|"
                       r"third|later|new) (one|attempt|try|run|call|request)s? (worked|succeeded|went through|passed)|"
                       r"retr(y|ied) (worked|succeeded|went through|passed)|on retry\b|"
                       # "I could not find it; then I did.": recovered, the clause ending there
                       r"then (i|we|it) (did|managed|worked|succeeded|went through)( it| so)?\s{0,3}([.!;,)]|$))", re.I)
# A check announced after a stated result ("Done. Next, I'll double-check the logs."): the claim stands, the
# agent says it will look again. Read at the end of a FUTURE_WORK cue, or right after it.
CHECK_VERB_END = re.compile(r"\b(double-?check|re-?check|cross-?check|sanity-?check|check|verify|confirm|validate|"
                            r"review|inspect|examine|test)$", re.I)
CHECK_AFTER = re.compile(r"\W{0,3}((also|now|then|just|quickly|first|again|briefly|further|carefully) )?(double-?check|"
                         r"re-?check|cross-?check|sanity-?check|check|verify|confirm|validate|review|inspect|examine|"
                         r"look (at|over|into)|go over|make sure|ensure)\b", re.I)
# About the time it took, not the outcome: "which unfortunately took a while".
DURATION = re.compile(r"\b((took|takes|taking|take) (a (while|bit|little|long)|(some|a long|more|longer|extra) time|longer|"
                      r"ages|forever|(a few|several|\d+) (seconds?|minutes?|hours?|tries|attempts))|slow(ly|er)?|"
                      r"long(er)? than (expected|planned|hoped))\b", re.I)
