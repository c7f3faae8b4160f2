/* The generated PTX, run on a small interpreter of the PTX subset that
 * unrolled.c emits (every unit, the entry's indirect call through its table
 * of tile functions, shared
 * memory and bar.sync, f16 / bf16 / f16x2 arithmetic), on every block and
 * thread of the launch. Without a GPU this proves the kernel text itself:
 * fp32, fp16 and bf16 results must equal schedule_execute_cpu bit for bit
 * (same operations in the same order), f16x2 ones the double reference
 * within f16 accuracy; every global access must stay inside B, C and bias,
 * and every element of C must be written. */
#define _POSIX_C_SOURCE 200809L /* strdup, strtok */

#include "test_util.h"

#include "codegen/schedule.h"
#include "codegen/unrolled.h"

#include <ctype.h>
#include <stdint.h>

/* ------------------------------------------------------- half formats */

static uint16_t f16_from_f32(float x)
{
    uint32_t f;
    memcpy(&f, &x, 4);
    uint32_t sign = (f >> 16) & 0x8000u;
    float a = fabsf(x);
    if (a != a)
        return (uint16_t)(sign | 0x7E00u);
    if (a >= 65520.0f)
        return (uint16_t)(sign | 0x7C00u);
    if (a < 6.103515625e-05f) /* subnormal: multiples of 2^-24, ties to even by rintf */
        return (uint16_t)(sign | (uint32_t)rintf(a * 16777216.0f));
    int e;
    float m = frexpf(a, &e); /* a = m · 2^e, m in [0.5, 1) */
    uint32_t mant = (uint32_t)rintf(m * 2048.0f); /* 11 significant bits */
    if (mant == 2048) {
        mant = 1024;
        e++;
    }
    return (uint16_t)(sign | ((uint32_t)(e + 14) << 10) | (mant - 1024));
}

static float f32_from_f16(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    float v = e == 0 ? ldexpf((float)m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexpf((float)(m | 1024), e - 25);
    return (h & 0x8000u) ? -v : v;
}

static uint16_t bf16_from_f32(float x)
{
    uint32_t f;
    memcpy(&f, &x, 4);
    if (x != x)
        return (uint16_t)((f >> 16) | 0x40u);
    f += 0x7FFFu + ((f >> 16) & 1u);
    return (uint16_t)(f >> 16);
}

static float f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint32_t bits_from_f32(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* ------------------------------------------------------ the program */

typedef struct func {
    char name[160];
    char **lines;   /* body lines, trimmed */
    int count;
    char params[8][16];
    int param_count;
    int regs[6];    /* declared registers per class: p h r rd f (index by class_of) */
} func;

enum { MAX_FUNCS = 512 };
static func funcs[MAX_FUNCS];
static int func_count;

/* The entry unit's table of tile function addresses: its name and, per
 * entry, 1 + the index of the function in funcs. */
static char table_name[160];
static char *table_text; /* "{f0, f1, ...}" until resolved */
static uint64_t table[MAX_FUNCS];
static int table_count;

static int class_of(const char *name, int *index) /* "%rd3" → 3, index 3 */
{
    static const char *const prefix[] = {"%p", "%h", "%rd", "%r", "%f"};
    static const int cls[] = {0, 1, 3, 2, 4};
    for (int i = 0; i < 5; i++) {
        size_t n = strlen(prefix[i]);
        if (strncmp(name, prefix[i], n) == 0 && isdigit((unsigned char)name[n])) {
            *index = atoi(name + n);
            return cls[i];
        }
    }
    return -1;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        s[--n] = '\0';
    return s;
}

/* Split every unit into functions (declarations are skipped). */
static void load_program(const ptx_program *p)
{
    func_count = 0;
    for (int u = 0; u < p->unit_count; u++) {
        char *text = strdup(p->units[u].text);
        func *cur = NULL;
        int in_head = 0, depth = 0; /* braces: the body and the calls' parameter scopes */
        for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
            char *t = trim(line);
            if (table_text && !strchr(table_text, ';')) { /* a table continued */
                table_text = realloc(table_text, strlen(table_text) + strlen(t) + 1);
                strcat(table_text, t);
            } else if (!strncmp(t, ".global .align 8 .u64 ", 22)) {
                sscanf(t + 22, "%159[^[]", table_name);
                table_text = strdup(strchr(t, '{'));
            } else if (!strncmp(t, ".visible .func ", 15) || !strncmp(t, ".visible .entry ", 16)) {
                cur = &funcs[func_count++];
                memset(cur, 0, sizeof *cur);
                const char *n = strchr(t + 10, ' ') + 1;
                snprintf(cur->name, sizeof cur->name, "%.*s", (int)strcspn(n, "("), n);
                in_head = 1;
            } else if (cur && in_head && !strncmp(t, ".param ", 7)) {
                char type[16], name[16];
                sscanf(t, ".param %15s %15[^,)]", type, name);
                snprintf(cur->params[cur->param_count++], 16, "%s", name);
            } else if (cur && in_head && !strcmp(t, "{")) {
                in_head = 0;
                depth = 1;
            } else if (cur && !in_head && !strcmp(t, "}") && --depth == 0) {
                cur = NULL;
            } else if (cur && !in_head && !strncmp(t, ".reg ", 5)) {
                char name[16];
                int count, idx;
                sscanf(t, ".reg %*s %15[^<]<%d>", name, &count);
                strcat(name, "0");
                cur->regs[class_of(name, &idx)] = count;
            } else if (cur && !in_head && *t) {
                depth += !strcmp(t, "{");
                cur->lines = realloc(cur->lines, (size_t)(cur->count + 1) * sizeof *cur->lines);
                cur->lines[cur->count++] = strdup(t);
            }
        }
        free(text);
    }
    /* resolve the table's names now that every unit is loaded */
    table_count = 0;
    for (char *name = strtok(table_text ? table_text + 1 : NULL, ", };"); name;
         name = strtok(NULL, ", };"))
        for (int f = 0; f < func_count; f++)
            if (!strcmp(funcs[f].name, name))
                table[table_count++] = (uint64_t)f + 1;
}

static void free_program(void)
{
    free(table_text);
    table_text = NULL;
    for (int f = 0; f < func_count; f++) {
        for (int i = 0; i < funcs[f].count; i++)
            free(funcs[f].lines[i]);
        free(funcs[f].lines);
    }
    func_count = 0;
}

static func *find_func(const char *name)
{
    for (int f = 0; f < func_count; f++)
        if (!strcmp(funcs[f].name, name))
            return &funcs[f];
    return NULL;
}

static int find_label(const func *f, const char *label)
{
    char want[80];
    snprintf(want, sizeof want, "%.64s:", label);
    for (int i = 0; i < f->count; i++)
        if (!strncmp(f->lines[i], want, strlen(want)))
            return i;
    return -1;
}

/* --------------------------------------------------------- machine */

typedef struct memory {
    uint8_t *b, *c, *bias, *shared;
    size_t b_bytes, c_bytes, bias_bytes, shared_bytes;
    uint8_t *c_written;
    int faults;
} memory;

enum { BASE_B = 0x10000000, BASE_C = 0x40000000, BASE_BIAS = 0x70000000, BASE_TABLE = 0x7F000000 };

typedef struct thread {
    func *f;
    int pc;
    uint64_t *reg[5];
    uint64_t params[8];   /* values passed in (the callee reads them by name)     */
    char out_names[8][16]; /* st.param slots being filled for the next call       */
    uint64_t out_vals[8];
    int out_count;
    unsigned tid, ctaid[2];
    int state; /* 0 running, 1 at barrier, 2 exited */
} thread;

static void frame_enter(thread *t, func *f)
{
    for (int c = 0; c < 5; c++) {
        free(t->reg[c]);
        t->reg[c] = calloc((size_t)f->regs[c] + 1, sizeof(uint64_t));
    }
    t->f = f;
    t->pc = 0;
}

static uint8_t *global_ptr(memory *m, uint64_t addr, size_t bytes, int store)
{
    struct {
        uint64_t base;
        uint8_t *p;
        size_t n;
    } r[4] = {{BASE_B, m->b, m->b_bytes},
              {BASE_C, m->c, m->c_bytes},
              {BASE_BIAS, m->bias, m->bias_bytes},
              {BASE_TABLE, (uint8_t *)table, (size_t)table_count * sizeof *table}};
    for (int i = 0; i < 4; i++)
        if (r[i].p && addr >= r[i].base && addr + bytes <= r[i].base + r[i].n &&
            (addr % bytes) == 0 && (!store || i == 1)) {
            if (store)
                memset(m->c_written + (addr - r[i].base), 1, bytes);
            return r[i].p + (addr - r[i].base);
        }
    if (m->faults++ < 5)
        fprintf(stderr, "bad %s of %zu bytes at 0x%llx\n", store ? "store" : "load", bytes,
                (unsigned long long)addr);
    return NULL;
}

static uint64_t *reg_ref(thread *t, const char *name)
{
    int idx, c = class_of(name, &idx);
    if (c < 0 || idx > t->f->regs[c])
        return NULL;
    return &t->reg[c][idx];
}

/* The value of an operand: register, special register, symbol or immediate. */
static uint64_t value(thread *t, const char *s)
{
    uint64_t *r = reg_ref(t, s);
    if (r)
        return *r;
    if (!strcmp(s, "%tid.x"))
        return t->tid;
    if (!strcmp(s, "%ctaid.x"))
        return t->ctaid[0];
    if (!strcmp(s, "%ctaid.y"))
        return t->ctaid[1];
    if (!strcmp(s, "spf_smem"))
        return 0;
    if (!strcmp(s, table_name))
        return BASE_TABLE;
    if (s[0] == '0' && s[1] == 'f')
        return strtoull(s + 2, NULL, 16);
    return (uint64_t)strtoll(s, NULL, 0);
}

static float fval(thread *t, const char *s) { return f32_from_bits((uint32_t)value(t, s)); }

static void set(thread *t, const char *s, uint64_t v)
{
    uint64_t *r = reg_ref(t, s);
    if (r)
        *r = v;
}

static void setf(thread *t, const char *s, float f) { set(t, s, bits_from_f32(f)); }

/* Split "a, {b, c}, [d+8]" into operands; braces are kept whole. */
static int operands(char *s, char ops[8][64])
{
    int n = 0, depth = 0;
    size_t len = 0;
    for (; *s && *s != ';'; s++) {
        if (*s == '{' || *s == '[' || *s == '(')
            depth++;
        if (*s == '}' || *s == ']' || *s == ')')
            depth--;
        if (*s == ',' && depth == 0) {
            ops[n++][len] = '\0';
            len = 0;
            continue;
        }
        if (*s != ' ' && len < 63)
            ops[n][len++] = *s;
    }
    ops[n][len] = '\0';
    return len ? n + 1 : n;
}

/* "{%f0,%f1}" → names; returns count. */
static int vector(const char *s, char names[4][16])
{
    int n = 0;
    const char *p = s[0] == '{' ? s + 1 : s;
    while (*p && *p != '}' && n < 4) {
        size_t k = strcspn(p, ",}");
        snprintf(names[n++], 16, "%.*s", (int)k, p);
        p += k + (p[k] == ',');
    }
    return n;
}

/* "[%rd0+16]" → address. */
static uint64_t address(thread *t, const char *s)
{
    char base[16] = "";
    long long off = 0;
    sscanf(s, "[%15[^]+]+%lld]", base, &off);
    return value(t, base) + (uint64_t)off;
}

static float f16x2_lane(uint32_t v, int hi) { return f32_from_f16((uint16_t)(hi ? v >> 16 : v)); }

static uint32_t f16x2_pack(float lo, float hi)
{
    return (uint32_t)f16_from_f32(lo) | ((uint32_t)f16_from_f32(hi) << 16);
}

/* Execute one instruction; returns 0 to continue, 1 at a barrier, 2 on
 * exit, -1 on an instruction the interpreter does not know. */
static int step(thread *t, memory *m)
{
    char line[512];
    snprintf(line, sizeof line, "%s", t->f->lines[t->pc++]);
    char *s = line;
    size_t n = strlen(s);
    if (n && s[n - 1] == ':')
        return 0; /* a label */
    if (n && s[n - 1] == ';')
        s[--n] = '\0';
    if (!strcmp(s, "{") || !strcmp(s, "}"))
        return 0;
    if (!strncmp(s, "$proto:", 7))
        return 0;
    if (s[0] == '@') {
        int neg = s[1] == '!';
        char p[16];
        sscanf(s + 1 + neg, "%15s", p);
        int on = value(t, p) != 0;
        s = strchr(s, ' ') + 1;
        if (on == neg)
            return 0;
    }
    char op[64];
    sscanf(s, "%63s", op);
    char ops[8][64];
    operands(s + strlen(op), ops);
    char vec[4][16];
    if (!strncmp(op, ".param", 6)) {
        char name[16];
        sscanf(s, ".param %*s %15[^;]", name);
        snprintf(t->out_names[t->out_count], 16, "%s", name);
        t->out_vals[t->out_count++] = 0;
    } else if (!strncmp(op, "st.param", 8)) {
        for (int i = 0; i < t->out_count; i++) {
            char want[24];
            snprintf(want, sizeof want, "[%s]", t->out_names[i]);
            if (!strcmp(ops[0], want))
                t->out_vals[i] = value(t, ops[1]);
        }
    } else if (!strncmp(op, "ld.param", 8)) {
        char name[16];
        sscanf(ops[1], "[%15[^]]]", name);
        if (!strcmp(name, "B"))
            set(t, ops[0], BASE_B);
        else if (!strcmp(name, "C"))
            set(t, ops[0], BASE_C);
        else if (!strcmp(name, "bias"))
            set(t, ops[0], m->bias ? BASE_BIAS : 0);
        else
            for (int i = 0; i < t->f->param_count; i++)
                if (!strcmp(t->f->params[i], name))
                    set(t, ops[0], t->params[i]);
    } else if (!strcmp(op, "call.uni")) {
        char callee[160];
        sscanf(ops[0], "%159s", callee);
        func *f = NULL;
        if (callee[0] == '%') { /* through a function address: 1 + index */
            uint64_t k = value(t, callee);
            f = k >= 1 && k <= (uint64_t)func_count ? &funcs[k - 1] : NULL;
        } else {
            f = find_func(callee);
        }
        if (!f)
            return -1;
        uint64_t vals[8];
        memcpy(vals, t->out_vals, sizeof vals);
        frame_enter(t, f);
        memcpy(t->params, vals, sizeof vals);
        t->out_count = 0;
    } else if (!strcmp(op, "bra") || !strcmp(op, "bra.uni")) {
        t->pc = find_label(t->f, ops[0]);
        if (t->pc < 0)
            return -1;
    } else if (!strcmp(op, "exit") || !strcmp(op, "ret")) {
        return 2;
    } else if (!strcmp(op, "bar.sync")) {
        return 1;
    } else if (!strcmp(op, "mov.u32") || !strcmp(op, "mov.f32")) {
        set(t, ops[0], (uint32_t)value(t, ops[1]));
    } else if (!strcmp(op, "mov.u64")) {
        set(t, ops[0], value(t, ops[1]));
    } else if (!strcmp(op, "mov.b32")) {
        if (ops[0][0] == '{') { /* unpack into two .b16 */
            vector(ops[0], vec);
            uint32_t v = (uint32_t)value(t, ops[1]);
            set(t, vec[0], v & 0xFFFFu);
            set(t, vec[1], v >> 16);
        } else {
            set(t, ops[0], (uint32_t)value(t, ops[1]));
        }
    } else if (!strcmp(op, "div.u32")) {
        set(t, ops[0], (uint32_t)value(t, ops[1]) / (uint32_t)value(t, ops[2]));
    } else if (!strcmp(op, "mul.lo.u32")) {
        set(t, ops[0], (uint32_t)(value(t, ops[1]) * value(t, ops[2])));
    } else if (!strcmp(op, "sub.u32")) {
        set(t, ops[0], (uint32_t)(value(t, ops[1]) - value(t, ops[2])));
    } else if (!strcmp(op, "mad.lo.u32")) {
        set(t, ops[0], (uint32_t)(value(t, ops[1]) * value(t, ops[2]) + value(t, ops[3])));
    } else if (!strcmp(op, "min.u32")) {
        uint32_t a = (uint32_t)value(t, ops[1]), b = (uint32_t)value(t, ops[2]);
        set(t, ops[0], a < b ? a : b);
    } else if (!strcmp(op, "selp.u32")) {
        set(t, ops[0], value(t, ops[3]) ? value(t, ops[1]) : value(t, ops[2]));
    } else if (!strncmp(op, "setp.", 5)) {
        uint32_t a = (uint32_t)value(t, ops[1]), b = (uint32_t)value(t, ops[2]);
        int r = !strcmp(op, "setp.lt.u32") ? a < b : !strcmp(op, "setp.ne.u32") ? a != b : a == b;
        set(t, ops[0], (uint64_t)r);
    } else if (!strcmp(op, "mul.wide.u32")) {
        set(t, ops[0], (uint64_t)(uint32_t)value(t, ops[1]) * (uint32_t)value(t, ops[2]));
    } else if (!strcmp(op, "cvta.to.global.u64")) {
        set(t, ops[0], value(t, ops[1]));
    } else if (!strcmp(op, "add.s64")) {
        set(t, ops[0], value(t, ops[1]) + value(t, ops[2]));
    } else if (!strcmp(op, "shl.b32")) {
        set(t, ops[0], (uint32_t)(value(t, ops[1]) << value(t, ops[2])));
    } else if (!strcmp(op, "and.b32")) {
        set(t, ops[0], (uint32_t)(value(t, ops[1]) & value(t, ops[2])));
    } else if (!strcmp(op, "cvt.u32.u16")) {
        set(t, ops[0], value(t, ops[1]) & 0xFFFFu);
    } else if (!strcmp(op, "mul.rn.f32")) {
        setf(t, ops[0], fval(t, ops[1]) * fval(t, ops[2]));
    } else if (!strcmp(op, "fma.rn.f32")) {
        setf(t, ops[0], fmaf(fval(t, ops[1]), fval(t, ops[2]), fval(t, ops[3])));
    } else if (!strcmp(op, "add.f32")) {
        setf(t, ops[0], fval(t, ops[1]) + fval(t, ops[2]));
    } else if (!strcmp(op, "max.f32")) {
        setf(t, ops[0], fmaxf(fval(t, ops[1]), fval(t, ops[2])));
    } else if (!strcmp(op, "mul.rn.f16x2") || !strcmp(op, "fma.rn.f16x2")) {
        uint32_t a = (uint32_t)value(t, ops[1]), b = (uint32_t)value(t, ops[2]);
        uint32_t c = op[0] == 'f' ? (uint32_t)value(t, ops[3]) : 0;
        float r[2];
        for (int h = 0; h < 2; h++) /* through float: a rare double rounding, within tolerance */
            r[h] = (float)((double)f16x2_lane(a, h) * f16x2_lane(b, h) + f16x2_lane(c, h));
        set(t, ops[0], f16x2_pack(r[0], r[1]));
    } else if (!strcmp(op, "cvt.f32.f16")) {
        setf(t, ops[0], f32_from_f16((uint16_t)value(t, ops[1])));
    } else if (!strcmp(op, "cvt.rn.f16.f32") || !strcmp(op, "cvt.rn.bf16.f32")) {
        float f = fval(t, ops[1]);
        set(t, ops[0], op[7] == 'b' ? bf16_from_f32(f) : f16_from_f32(f));
    } else if (!strcmp(op, "cvt.rn.f16x2.f32") || !strcmp(op, "cvt.rn.bf16x2.f32")) {
        float hi = fval(t, ops[1]), lo = fval(t, ops[2]);
        uint32_t v = op[7] == 'b' ? (uint32_t)bf16_from_f32(lo) | ((uint32_t)bf16_from_f32(hi) << 16)
                                  : f16x2_pack(lo, hi);
        set(t, ops[0], v);
    } else if (!strncmp(op, "ld.", 3) || !strncmp(op, "st.", 3)) {
        int store = op[0] == 's', shared = strstr(op, ".shared") != NULL;
        int width = strstr(op, ".v4") ? 4 : strstr(op, ".v2") ? 2 : 1;
        size_t es = strstr(op, "u64") ? 8 : strstr(op, "b16") ? 2 : 4;
        int count = vector(store ? ops[1] : ops[0], vec);
        uint64_t addr = address(t, store ? ops[0] : ops[1]);
        if (count != width)
            return -1;
        uint8_t *p = NULL;
        if (shared) {
            if (addr + es * (size_t)width <= m->shared_bytes && addr % (es * (size_t)width) == 0)
                p = m->shared + addr;
            else if (m->faults++ < 5)
                fprintf(stderr, "bad shared access at %llu\n", (unsigned long long)addr);
        } else {
            p = global_ptr(m, addr, es * (size_t)width, store);
        }
        if (!p)
            return 0;
        for (int i = 0; i < width; i++) {
            uint64_t v = 0; /* little endian: the low es bytes */
            if (store) {
                v = value(t, vec[i]);
                memcpy(p + es * (size_t)i, &v, es);
            } else {
                memcpy(&v, p + es * (size_t)i, es);
                set(t, vec[i], v);
            }
        }
    } else {
        fprintf(stderr, "unknown instruction: %s\n", s);
        return -1;
    }
    return 0;
}

/* Run the whole grid; returns 0 when every thread exited cleanly. */
static int run_grid(const ptx_program *p, memory *m)
{
    func *entry = find_func(p->entry);
    if (!entry)
        return -1;
    unsigned threads = p->block[0];
    thread *th = calloc(threads, sizeof *th);
    int bad = 0;
    for (unsigned y = 0; y < p->grid[1] && !bad; y++)
        for (unsigned x = 0; x < p->grid[0] && !bad; x++) {
            memset(m->shared, 0xA5, m->shared_bytes); /* garbage, as on the GPU */
            for (unsigned i = 0; i < threads; i++) {
                th[i].tid = i;
                th[i].ctaid[0] = x;
                th[i].ctaid[1] = y;
                th[i].state = 0;
                th[i].out_count = 0;
                frame_enter(&th[i], entry);
            }
            for (;;) {
                int running = 0, waiting = 0;
                for (unsigned i = 0; i < threads && !bad; i++) {
                    while (th[i].state == 0) {
                        int r = step(&th[i], m);
                        if (r < 0) {
                            bad = 1;
                            fprintf(stderr, "interpreter stopped in %s at \"%s\"\n", th[i].f->name,
                                    th[i].f->lines[th[i].pc - 1]);
                        }
                        if (r != 0)
                            th[i].state = r < 0 ? 2 : r;
                    }
                    waiting += th[i].state == 1;
                    running += th[i].state != 2;
                }
                if (bad || !running)
                    break;
                CHECK_MSG(waiting == running, "barrier reached by %d of %d threads", waiting, running);
                for (unsigned i = 0; i < threads; i++)
                    if (th[i].state == 1)
                        th[i].state = 0;
            }
        }
    for (unsigned i = 0; i < threads; i++)
        for (int c = 0; c < 5; c++)
            free(th[i].reg[c]);
    free(th);
    return bad ? -1 : 0;
}

/* --------------------------------------------------------------- tests */

static spf_matrix *random_matrix(int64_t m, int64_t k, double density, int64_t empty_from,
                                 int64_t empty_to, uint64_t seed)
{
    spf_matrix *g = gen_matrix(SPF_GEN_UNIFORM, m, k, 1.0 - density, seed), *a = NULL;
    /* empty some rows: rebuild the CSR without them */
    const int64_t *rp = spf_matrix_row_ptr(g);
    int64_t nnz = spf_matrix_nnz(g);
    int64_t *rp2 = malloc((size_t)(m + 1) * sizeof *rp2);
    int32_t *ci2 = malloc((size_t)(nnz + 1) * sizeof *ci2);
    float *v2 = malloc((size_t)(nnz + 1) * sizeof *v2);
    int64_t out = 0;
    rp2[0] = 0;
    for (int64_t i = 0; i < m; i++) {
        if (i < empty_from || i >= empty_to)
            for (int64_t e = rp[i]; e < rp[i + 1]; e++) {
                ci2[out] = spf_matrix_col_idx(g)[e];
                v2[out++] = spf_matrix_values(g)[e];
            }
        rp2[i + 1] = out;
    }
    CHECK_OK(spf_matrix_create_csr(m, k, out, rp2, ci2, v2, 0, &a));
    free(rp2);
    free(ci2);
    free(v2);
    spf_matrix_free(g);
    return a;
}

typedef struct emu_case {
    const char *dlmc; /* a DLMC pattern under the data folder (m, k taken from it), or NULL */
    int64_t m, k;
    double density;
    int64_t n;
    spf_kernel_config cfg;
    spf_dtype dtype;
    int f16x2, bias, relu, permute;
    int all_empty; /* no nonzeros at all: C is bias (or zero) */
} emu_case;

static void run_case(const emu_case *given, uint64_t seed)
{
    emu_case cc = *given, *c = &cc;
    spf_matrix *a = NULL;
    if (c->dlmc) {
        a = data_case_matrix(c->dlmc, &c->m, &c->k);
        if (!a)
            return;
    } else if (c->all_empty) {
        a = random_matrix(c->m, c->k, c->density, 0, c->m, seed);
    } else {
        a = random_matrix(c->m, c->k, c->density, c->m / 4, c->m / 4 + 5, seed);
    }
    int32_t *perm = NULL;
    if (c->permute) {
        perm = malloc((size_t)c->m * sizeof *perm);
        for (int64_t i = 0; i < c->m; i++)
            perm[i] = (int32_t)(c->m - 1 - (i * 5 + 2) % c->m); /* 5 coprime to every m used */
    }
    ptx_program prog;
    spf_status st = unrolled_generate(a, perm, c->n, &c->cfg, c->dtype, c->f16x2, c->bias, c->relu,
                                      90, 0, &prog);
    CHECK_MSG(st == SPF_OK, "generate: %s", spf_last_error());
    if (st != SPF_OK)
        goto done_matrix;
    int64_t kn = c->k * c->n, mn = c->m * c->n;
    size_t es = c->dtype == SPF_DTYPE_F32 ? 4 : 2;
    float *b = malloc((size_t)kn * sizeof *b), *bias = malloc((size_t)c->m * sizeof *bias);
    float *want = malloc((size_t)mn * sizeof *want);
    spf_fill_uniform(b, kn, seed + 1);
    spf_fill_uniform(bias, c->m, seed + 2);
    memory mem = {0};
    mem.b_bytes = (size_t)kn * es;
    mem.c_bytes = (size_t)mn * es;
    mem.b = malloc(mem.b_bytes);
    mem.c = malloc(mem.c_bytes);
    mem.c_written = calloc(mem.c_bytes, 1);
    mem.bias = c->bias ? (uint8_t *)bias : NULL;
    mem.bias_bytes = (size_t)c->m * sizeof(float);
    mem.shared_bytes = prog.shared_bytes;
    mem.shared = malloc(prog.shared_bytes + 16);
    memset(mem.c, 0xFF, mem.c_bytes); /* poison: NaN in every format */
    /* B in storage precision; the CPU executor sees the same rounded values */
    for (int64_t i = 0; i < kn; i++) {
        if (c->dtype == SPF_DTYPE_F16) {
            uint16_t h = f16_from_f32(b[i]);
            memcpy(mem.b + 2 * i, &h, 2);
            b[i] = f32_from_f16(h);
        } else if (c->dtype == SPF_DTYPE_BF16) {
            uint16_t h = bf16_from_f32(b[i]);
            memcpy(mem.b + 2 * i, &h, 2);
            b[i] = f32_from_bits((uint32_t)h << 16);
        } else {
            memcpy(mem.b + 4 * i, &b[i], 4);
        }
    }
    schedule s;
    CHECK_OK(schedule_create(a, perm, c->n, &c->cfg, &s));
    CHECK_OK(schedule_execute_cpu(&s, b, want, c->bias ? bias : NULL, c->relu));
    schedule_free(&s);

    load_program(&prog);
    CHECK_MSG(run_grid(&prog, &mem) == 0, "%s: interpreter stopped", prog.entry);
    CHECK_MSG(mem.faults == 0, "%s: %d out-of-bounds accesses", prog.entry, mem.faults);
    int64_t unwritten = 0, mismatches = 0;
    float worst = 0; /* f16x2: largest |C - C_fp32acc| / (1 + |C_fp32acc|) */
    for (size_t i = 0; i < mem.c_bytes; i++)
        unwritten += !mem.c_written[i];
    const int64_t *rp = spf_matrix_row_ptr(a);
    for (int64_t i = 0; i < mn; i++) {
        float got;
        if (c->dtype == SPF_DTYPE_F32) {
            memcpy(&got, mem.c + 4 * i, 4);
        } else {
            uint16_t h;
            memcpy(&h, mem.c + 2 * i, 2);
            got = c->dtype == SPF_DTYPE_F16 ? f32_from_f16(h) : f32_from_bits((uint32_t)h << 16);
        }
        float expect = want[i];
        if (c->dtype == SPF_DTYPE_F16)
            expect = f32_from_f16(f16_from_f32(expect));
        else if (c->dtype == SPF_DTYPE_BF16)
            expect = f32_from_bits((uint32_t)bf16_from_f32(expect) << 16);
        int ok;
        if (c->f16x2 && fabsf(got - expect) / (1.0f + fabsf(expect)) > worst)
            worst = fabsf(got - expect) / (1.0f + fabsf(expect));
        if (c->f16x2) {
            /* f16 accumulation: about 2^-11 per term of a row's sum */
            int64_t row = i / c->n, terms = rp[row + 1] - rp[row] + 1;
            ok = fabsf(got - expect) <= 2e-3f * (float)terms * (1.0f + fabsf(expect));
        } else {
            ok = bits_from_f32(got) == bits_from_f32(expect);
        }
        if (!ok && mismatches++ < 3)
            fprintf(stderr, "%s n=%lld: C[%lld][%lld] = %.9g, expected %.9g\n", prog.entry,
                    (long long)c->n, (long long)(i / c->n), (long long)(i % c->n), got, expect);
    }
    CHECK_MSG(unwritten == 0, "%s: %lld bytes of C never written", prog.entry, (long long)unwritten);
    CHECK_MSG(mismatches == 0, "%s n=%lld: %lld mismatches", prog.entry, (long long)c->n,
              (long long)mismatches);
    printf("%-40s n=%-4lld %s%s%s", prog.entry, (long long)c->n, c->bias ? "bias " : "",
           c->relu ? "relu " : "", c->permute ? "permuted" : "");
    if (c->f16x2)
        printf("  (emulated f16x2 error vs fp32 accumulation: %.2e)", (double)worst);
    printf("\n");
    free_program();
    free(mem.b);
    free(mem.c);
    free(mem.c_written);
    free(mem.shared);
    free(b);
    free(bias);
    free(want);
    ptx_program_free(&prog);
done_matrix:
    free(perm);
    spf_matrix_free(a);
}

int main(void)
{
    const emu_case cases[] = {
        {NULL, 21, 30, 0.2, 40, {4, 32, 1, 1, 1}, SPF_DTYPE_F32, 0, 1, 1, 1, 0},
        {NULL, 21, 30, 0.2, 1, {3, 32, 1, 0, 1}, SPF_DTYPE_F32, 0, 0, 0, 0, 0},
        {NULL, 21, 30, 0.2, 49, {8, 32, 1, 2, 2}, SPF_DTYPE_F32, 0, 1, 0, 1, 0},
        {NULL, 24, 40, 0.15, 68, {5, 64, 4, 1, 2}, SPF_DTYPE_F32, 0, 1, 1, 1, 0},
        {NULL, 24, 40, 0.15, 36, {8, 32, 4, 3, 4}, SPF_DTYPE_F32, 0, 0, 1, 0, 0},
        {NULL, 17, 50, 0.1, 130, {4, 64, 2, 0, 1}, SPF_DTYPE_F32, 0, 1, 1, 0, 0},
        {NULL, 21, 30, 0.2, 127, {4, 32, 1, 1, 1}, SPF_DTYPE_F16, 0, 1, 1, 1, 0},
        {NULL, 24, 40, 0.15, 68, {5, 64, 4, 1, 2}, SPF_DTYPE_F16, 0, 1, 1, 0, 0},
        {NULL, 21, 30, 0.2, 6, {3, 64, 2, 2, 1}, SPF_DTYPE_BF16, 0, 1, 0, 1, 0},
        {NULL, 24, 40, 0.15, 68, {6, 32, 4, 1, 4}, SPF_DTYPE_BF16, 0, 0, 1, 1, 0},
        {NULL, 21, 30, 0.2, 3, {2, 32, 1, 1, 1}, SPF_DTYPE_BF16, 0, 1, 1, 0, 0},
        {NULL, 24, 40, 0.15, 68, {5, 64, 4, 1, 2}, SPF_DTYPE_F16, 1, 1, 1, 1, 0},
        {NULL, 21, 30, 0.2, 50, {4, 64, 2, 2, 1}, SPF_DTYPE_F16, 1, 0, 0, 0, 0},
        {NULL, 11, 12, 0.3, 33, {4, 32, 1, 1, 2}, SPF_DTYPE_F32, 0, 1, 1, 1, 1},
        {NULL, 10, 12, 0.3, 8, {4, 128, 4, 0, 1}, SPF_DTYPE_BF16, 0, 0, 0, 0, 1},
        {"dlmc/rn50/magnitude_pruning/0.9/bottleneck_1_block_group1_1_1.smtx", 0, 0, 0, 49,
         {8, 32, 1, 2, 2}, SPF_DTYPE_F32, 0, 1, 1, 1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(&cases[i], 40 + i);
    /* a seeded random sweep over shapes and configurations */
    uint64_t r = 12345;
    for (int i = 0; i < 40; i++) {
#define RAND(n) ((int)((r = r * 6364136223846793005ull + 1442695040888963407ull) >> 33) % (n))
        static const int vs[] = {1, 2, 4}, gts[] = {8, 16, 32, 64};
        emu_case c;
        memset(&c, 0, sizeof c);
        c.cfg.v = vs[RAND(3)];
        c.cfg.ksplit = 1 + RAND(4);
        int gt;
        do
            gt = gts[RAND(4)];
        while (gt * c.cfg.ksplit % 32 != 0);
        c.cfg.n1 = gt * c.cfg.v;
        c.cfg.m1 = 1 + RAND(9);
        c.cfg.prefetch = RAND(4);
        c.m = 5 + RAND(26);
        c.k = 5 + RAND(36);
        c.density = 0.05 + 0.05 * RAND(6);
        c.n = c.cfg.v * (1 + RAND(150 / c.cfg.v));
        c.dtype = (spf_dtype)RAND(3);
        c.f16x2 = c.dtype == SPF_DTYPE_F16 && c.cfg.v > 1 && RAND(2);
        c.bias = RAND(2);
        c.relu = RAND(2);
        c.permute = c.m % 5 != 0 && RAND(2);
        c.all_empty = RAND(20) == 0;
#undef RAND
        run_case(&c, 100 + (uint64_t)i);
    }
    return check_report();
}
