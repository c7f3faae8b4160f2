/* The CLI's progress display (src/cli/cli_progress.c, linked in here):
 * what spforge run and tune print on stderr for a plan's events, off a
 * terminal (whole lines: one per stage begun or ended, the plan's end) and
 * on one (one line redrawn with "\r" and erased with ESC[K, cut to the
 * width), from a real CPU plan and from the nested stages of a device
 * plan replayed as events; the command's own notes and log lines printed
 * above the line. tests/cli/test_cli.sh runs the commands themselves. */
#define _POSIX_C_SOURCE 200809L

#include "test_util.h"

#include "cli/cli.h"

#include <unistd.h>

/* stderr into a file for the duration of a test; its text afterwards. */
static int saved_stderr = -1;
static char capture_path[64];

static void capture_begin(void)
{
    fflush(stderr);
    snprintf(capture_path, sizeof capture_path, "/tmp/spf-test-cli-progress-XXXXXX");
    int fd = mkstemp(capture_path);
    CHECK(fd >= 0);
    saved_stderr = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    close(fd);
}

static char *capture_end(void)
{
    fflush(stderr);
    dup2(saved_stderr, STDERR_FILENO);
    close(saved_stderr);
    size_t size = 0;
    unsigned char *text = file_slurp(capture_path, &size); /* room for a NUL */
    unlink(capture_path);
    if (text)
        text[size] = '\0';
    return (char *)text;
}

static int lines_with(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; p && (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

static spf_progress event(spf_stage stage, spf_progress_phase phase, int depth, int64_t done,
                          int64_t total, const char *text)
{
    return (spf_progress){.size = sizeof(spf_progress), .stage = stage, .phase = phase,
                          .depth = depth, .done = done, .total = total, .text = text};
}

/* A real CPU plan's events, off a terminal: a line per stage, the end. */
static void test_lines_from_a_plan(void)
{
    spf_matrix *a = gen_matrix(SPF_GEN_UNIFORM, 37, 53, 0.8, 3);
    cli_progress display;
    capture_begin();
    cli_progress_init(&display, "test", 1);
    spf_plan_options o;
    spf_plan_options_init(&o);
    o.strategy = SPF_STRATEGY_CPU;
    o.progress = cli_progress_event;
    o.progress_user = &display;
    spf_plan *p = NULL;
    spf_status st = spf_plan_create(a, 4, &o, &p);
    cli_progress_note(&display, 1, "cpu run %d/%d", 1, 3);
    cli_progress_finish(&display);
    char *text = capture_end();
    CHECK_OK(st);
    CHECK_MSG(text && !display.tty && !strchr(text, '\r') && !strstr(text, "\033["),
              "off a terminal: plain lines: %s", text ? text : "(none)");
    CHECK_MSG(text && lines_with(text, "spforge test: ") >= 5 &&
                  strstr(text, "planning 37x53") && strstr(text, "candidates > build cpu") &&
                  strstr(text, "plan ready") && strstr(text, "cpu run 1/3"),
              "lines: %s", text ? text : "(none)");
    free(text);
    spf_plan_free(p);
    spf_matrix_free(a);

    /* off: nothing at all */
    capture_begin();
    cli_progress_init(&display, "test", 0);
    spf_progress e = event(SPF_STAGE_PLAN, SPF_PROGRESS_BEGIN, 0, 0, 1, "x");
    CHECK(cli_progress_event(&e, &display) == 0);
    cli_progress_note(&display, 1, "note");
    cli_progress_finish(&display);
    text = capture_end();
    CHECK_MSG(text && text[0] == '\0', "off: %s", text ? text : "(none)");
    free(text);
}

/* A device plan's nesting, replayed, on a "terminal" 60 columns wide:
 * the path of open stages, redrawn, never wider than the terminal; a log
 * line goes above it and the line comes back; the end erases it. */
static void test_terminal_line(void)
{
    cli_progress display;
    capture_begin();
    cli_progress_init(&display, "tune", 1);
    display.tty = 1, display.width = 200; /* as a terminal would set them */
    cli_progress_label(&display, "search");
    spf_progress events[] = {
        event(SPF_STAGE_PLAN, SPF_PROGRESS_BEGIN, 0, 0, 1, "512x512, 26214 nonzeros"),
        event(SPF_STAGE_CANDIDATES, SPF_PROGRESS_BEGIN, 1, 0, 3, "3 of 5 strategies"),
        event(SPF_STAGE_BUILD, SPF_PROGRESS_BEGIN, 2, 0, 1, "unrolled"),
        event(SPF_STAGE_PROXIES, SPF_PROGRESS_BEGIN, 3, 0, 10, "10 candidates"),
        event(SPF_STAGE_COMPILE, SPF_PROGRESS_BEGIN, 4, 0, 16, "spf_proxy_f32_m8"),
        event(SPF_STAGE_COMPILE, SPF_PROGRESS_STEP, 4, 5, 16, "spf_proxy_f32_m8"),
    };
    for (size_t i = 0; i < sizeof events / sizeof events[0]; i++)
        cli_progress_event(&events[i], &display);
    display.width = 60;
    cli_progress_print(&display, "spforge tune: a log line");
    spf_progress end = event(SPF_STAGE_COMPILE, SPF_PROGRESS_END, 4, 16, 16, "spf_proxy_f32_m8");
    cli_progress_event(&end, &display);
    spf_progress plan_end = event(SPF_STAGE_PLAN, SPF_PROGRESS_END, 0, 1, 1, "");
    cli_progress_event(&plan_end, &display);
    cli_progress_finish(&display);
    char *text = capture_end();
    CHECK_MSG(text && strstr(text, "search: candidates 0/3 > build unrolled > proxies 0/10 > "
                                   "compile 5/16 (spf_proxy_f32_m8)\033[K"),
              "the nested line: %s", text ? text : "(none)");
    CHECK_MSG(text && strstr(text, "\r\033[Kspforge tune: a log line\n\r"),
              "a log line erases the line, then it is drawn again: %s", text ? text : "(none)");
    /* every redraw after the width shrank fits in 59 columns */
    const char *last = text ? strrchr(text, '\n') : NULL;
    int widest = 0;
    for (const char *p = last; p && *p; p++) {
        if (*p != '\r')
            continue;
        const char *q = p + 1;
        int len = 0;
        while (q[len] && q[len] != '\r' && q[len] != '\033')
            len++;
        widest = len > widest ? len : widest;
    }
    CHECK_MSG(widest > 20 && widest <= 59, "widest redraw %d columns on a 60-column terminal",
              widest);
    size_t len = text ? strlen(text) : 0;
    CHECK_MSG(len >= 4 && strcmp(text + len - 4, "\r\033[K") == 0,
              "the line is erased at the end");
    free(text);
}

int main(int argc, char **argv)
{
    test_lines_from_a_plan();
    test_terminal_line();
    return check_report();
}
