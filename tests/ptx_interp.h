/* A small interpreter of the PTX subset the generated kernels use
 * (src/codegen: every unit, the entry's indirect call through its table of
 * tile functions, the proxies' block → cluster table and n1 argument,
 * shared memory and bar.sync, f16 / bf16 / f16x2 arithmetic), run on every
 * block and thread of a launch. Global accesses outside B, C, bias and the
 * tables are counted as faults, stores outside C too, and every byte of C
 * stored is marked. Shared by test_unrolled_emulate.c (the kernels' results)
 * and test_proxy_emulate.c (the proxies' bounds); one includer per program,
 * as it keeps its state in statics. */
#ifndef SPF_TESTS_PTX_INTERP_H
#define SPF_TESTS_PTX_INTERP_H

#include "test_util.h"

#include "gpu/program.h"

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
static char cl_name[160];
static char *cl_text;
static uint16_t cl[70000];
static int cl_count;

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
            if (cl_text && !strchr(cl_text, ';')) {
                cl_text = realloc(cl_text, strlen(cl_text) + strlen(t) + 1);
                strcat(cl_text, t);
            } else if (!strncmp(t, ".global .align 2 .u16 ", 22)) {
                sscanf(t + 22, "%159[^[]", cl_name);
                cl_text = strdup(strchr(t, '{'));
            } else if (table_text && !strchr(table_text, ';')) { /* a table continued */
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
    cl_count = 0;
    for (char *v = strtok(cl_text ? cl_text + 1 : NULL, ", };"); v; v = strtok(NULL, ", };"))
        cl[cl_count++] = (uint16_t)atoi(v);
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
    free(cl_text);
    cl_text = NULL;
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
    uint32_t proxy_n1;   /* the proxy entry's n1 argument (0 for a real kernel) */
} memory;

enum { BASE_B = 0x10000000, BASE_C = 0x40000000, BASE_BIAS = 0x70000000, BASE_TABLE = 0x7F000000, BASE_CL = 0x7E000000 };

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
    } r[5] = {{BASE_B, m->b, m->b_bytes},
              {BASE_C, m->c, m->c_bytes},
              {BASE_BIAS, m->bias, m->bias_bytes},
              {BASE_TABLE, (uint8_t *)table, (size_t)table_count * sizeof *table},
              {BASE_CL, (uint8_t *)cl, (size_t)cl_count * 2}};
    for (int i = 0; i < 5; i++)
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
    if (cl_name[0] && !strcmp(s, cl_name))
        return BASE_CL;
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
    } else if (!strcmp(op, "mov.b16")) {
        set(t, ops[0], (uint16_t)value(t, ops[1]));
    } else if (!strcmp(op, "add.s32")) {
        set(t, ops[0], (uint32_t)(value(t, ops[1]) + value(t, ops[2])));
    } else if (!strcmp(op, "or.b32")) {
        set(t, ops[0], (uint32_t)(value(t, ops[1]) | value(t, ops[2])));
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
        size_t es = strstr(op, "u64") ? 8 : (strstr(op, "b16") || strstr(op, "u16")) ? 2 : 4;
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
                th[i].params[3] = m->proxy_n1;
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

#endif
