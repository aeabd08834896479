#ifndef MTC_INTERRUPT_H
#define MTC_INTERRUPT_H

/*
 * Ctrl-C (SIGINT) in a program that moves data: a progress line on the
 * terminal is ended first, then one error log line (a JSON record with
 * --log-format json) says "interrupted", with "; run the same command to continue" when can_continue says a second run picks up
 * where this one stopped, and the program exits 130 (128 + SIGINT) at once.
 * What it leaves is what a kill leaves, which the next run resumes or sweeps
 * (mtc(7) §9.5). Called again, the last call's can_continue holds.
 */
void mtc_cli_on_interrupt(int can_continue);

#endif
