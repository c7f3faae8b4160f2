/* The progress display of spforge run and spforge tune (cli.h): the plan's
 * progress events (spf_plan_options.progress) and the command's own steps
 * on stderr. On a terminal one line, redrawn in place ("\r", then erase to
 * the end of the line) and cut to the terminal's width so that it never
 * wraps; elsewhere (--progress into a file or a pipe) one line per stage
 * begun or ended and a step line at most once a second, so a log stays
 * readable. stdout is never written. */
#define _POSIX_C_SOURCE 200809L

#include "cli/cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

enum { STEP_LINE_INTERVAL_S = 1 }; /* off a terminal */

int cli_progress_wanted(int progress, int no_progress, int json)
{
    if (progress)
        return 1;
    if (no_progress || json)
        return 0;
    return isatty(STDERR_FILENO);
}

static int terminal_width(void)
{
    struct winsize ws;
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20)
        return ws.ws_col;
    const char *columns = getenv("COLUMNS");
    int c = columns ? atoi(columns) : 0;
    return c >= 20 && c <= 1000 ? c : 80;
}

void cli_progress_init(cli_progress *p, const char *cmd, int on)
{
    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->lock, NULL);
    p->cmd = cmd;
    p->on = on;
    p->tty = on && isatty(STDERR_FILENO);
    p->width = p->tty ? terminal_width() : 0;
    p->t0 = cli_now();
}

void cli_progress_label(cli_progress *p, const char *label)
{
    pthread_mutex_lock(&p->lock);
    snprintf(p->label, sizeof p->label, "%s", label ? label : "");
    pthread_mutex_unlock(&p->lock);
}

/* Append to line (cap bytes) as printf would, never past the end. */
static void put(char *line, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void put(char *line, size_t cap, const char *fmt, ...)
{
    size_t used = strlen(line);
    if (used + 1 >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + used, cap - used, fmt, ap);
    va_end(ap);
}

/* The stages open, outermost first: "candidates 1/3 > build unrolled >
 * compile 5/16 (spf_unrolled_...)"; the plan alone shows its text. */
static void describe(const cli_progress *p, char *line, size_t cap, const char *suffix)
{
    snprintf(line, cap, "spforge %s: %5.1f s ", p->cmd, cli_now() - p->t0);
    if (p->label[0])
        put(line, cap, "%s: ", p->label);
    if (p->note[0]) {
        put(line, cap, "%s", p->note);
        return;
    }
    if (p->depth <= 1) {
        put(line, cap, "planning %s", p->levels[0].text);
        return;
    }
    for (int d = 1; d < p->depth && d < CLI_PROGRESS_LEVELS; d++) {
        const cli_progress_level *l = &p->levels[d];
        int named = l->stage == SPF_STAGE_BUILD || l->stage == SPF_STAGE_TIME;
        put(line, cap, "%s%s", d > 1 ? " > " : "", spf_stage_name(l->stage));
        if (named)
            put(line, cap, " %s", l->text);
        else if (l->total > 1)
            put(line, cap, " %lld/%lld", (long long)l->done, (long long)l->total);
        if (d == p->depth - 1 && !named && l->text[0])
            put(line, cap, " (%s)", l->text);
    }
    put(line, cap, "%s", suffix);
}

static void erase(cli_progress *p)
{
    if (p->shown) {
        fputs("\r\033[K", stderr);
        p->shown = 0;
    }
}

/* Show the state: on a terminal redraw the line, cut to the width. */
static void draw_with(cli_progress *p, const char *suffix)
{
    char line[512];
    describe(p, line, sizeof line, suffix);
    if (!p->tty) {
        fprintf(stderr, "%s\n", line);
        return;
    }
    /* at most width - 1 characters (UTF-8 code points: a file name may
     * have some), so that the line never wraps and \r returns to its start */
    int columns = 0;
    for (char *c = line; *c; c++)
        if (((unsigned char)*c & 0xC0) != 0x80 && ++columns == p->width) {
            *c = '\0';
            break;
        }
    fprintf(stderr, "\r%s\033[K", line);
    fflush(stderr);
    p->shown = 1;
}

static void draw(cli_progress *p) { draw_with(p, ""); }

static void event_locked(cli_progress *p, const spf_progress *e)
{
    int d = e->depth < CLI_PROGRESS_LEVELS ? e->depth : CLI_PROGRESS_LEVELS - 1;
    cli_progress_level *l = &p->levels[d];
    l->stage = e->stage;
    l->done = e->done;
    l->total = e->total;
    snprintf(l->text, sizeof l->text, "%s", e->text);
    p->note[0] = '\0';
    if (e->phase == SPF_PROGRESS_BEGIN)
        p->depth = d + 1;
    int line_now = 1;
    if (e->stage == SPF_STAGE_PLAN && e->phase == SPF_PROGRESS_END) {
        p->depth = 0;
        if (p->tty) {
            erase(p);
            return;
        }
        fprintf(stderr, "spforge %s: %5.1f s %s%splan %s\n", p->cmd, cli_now() - p->t0,
                p->label, p->label[0] ? ": " : "",
                e->status == SPF_OK ? "ready" : spf_status_string(e->status));
        return;
    }
    if (e->phase == SPF_PROGRESS_END) {
        if (p->tty) {
            p->depth = d; /* the stage closed: the line shows its parent */
            draw(p);
        } else { /* the line of the stage that ended, and how */
            char how[96];
            if (e->status == SPF_OK)
                snprintf(how, sizeof how, ": done in %.2f s", e->stage_s);
            else
                snprintf(how, sizeof how, ": %s after %.2f s", spf_status_string(e->status),
                         e->stage_s);
            p->depth = d + 1;
            draw_with(p, how);
            p->depth = d;
        }
        return;
    }
    if (!p->tty && e->phase == SPF_PROGRESS_STEP) {
        double now = cli_now();
        line_now = now - p->last_line >= STEP_LINE_INTERVAL_S;
        if (line_now)
            p->last_line = now;
    }
    if (line_now)
        draw(p);
}

int cli_progress_event(const spf_progress *e, void *user)
{
    cli_progress *p = user;
    if (!p->on)
        return 0;
    pthread_mutex_lock(&p->lock);
    event_locked(p, e);
    pthread_mutex_unlock(&p->lock);
    return 0;
}

void cli_progress_note(cli_progress *p, int begin, const char *fmt, ...)
{
    if (!p->on)
        return;
    pthread_mutex_lock(&p->lock);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->note, sizeof p->note, fmt, ap);
    va_end(ap);
    double now = cli_now();
    if (begin || now - p->last_line >= (p->tty ? 0.1 : STEP_LINE_INTERVAL_S)) {
        p->last_line = now;
        draw(p);
    }
    pthread_mutex_unlock(&p->lock);
}

void cli_progress_print(cli_progress *p, const char *fmt, ...)
{
    pthread_mutex_lock(&p->lock);
    int again = p->shown;
    erase(p);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    if (again)
        draw(p);
    pthread_mutex_unlock(&p->lock);
}

void cli_progress_finish(cli_progress *p)
{
    pthread_mutex_lock(&p->lock);
    erase(p);
    p->note[0] = '\0';
    p->depth = 0;
    fflush(stderr);
    pthread_mutex_unlock(&p->lock);
}

void cli_progress_destroy(cli_progress *p)
{
    cli_progress_finish(p);
    pthread_mutex_destroy(&p->lock);
}
