/* spforge info: what this build and machine offer. */
#include "cli/cli.h"

#include "core/parallel.h"
#include "gpu/assembler.h"
#include "strategy/strategy.h"

#include <stdio.h>

/* The JIT's assemblers (gpu/assembler.h): which one a plan would use now,
 * and what there is to choose from. */
static void json_assembler(json_writer *w, const assembler_report *r)
{
    char version[32];
    snprintf(version, sizeof version, "%d.%d", r->inprocess_major, r->inprocess_minor);
    json_object_begin(w, "assembler");
    json_string(w, "chosen", r->chosen ? jit_assembler_name(r->chosen) : NULL);
    json_string(w, "forced", r->forced);
    json_string(w, "error", r->why[0] ? r->why : NULL);
    json_string(w, "default_order", r->order);
    json_string(w, "inprocess", r->inprocess ? version : NULL);
    json_string(w, "ptxas", r->ptxas[0] ? r->ptxas : NULL);
    json_object_end(w);
}

static void print_assembler(const assembler_report *r)
{
    if (r->chosen)
        printf("jit assembler: %s (%s)\n", jit_assembler_name(r->chosen),
               r->forced ? "forced by SPFORGE_ASSEMBLER" : "first of the default order");
    else
        printf("jit assembler: none: %s\n", r->why);
    printf("  default order: %s\n", r->order);
    if (r->inprocess)
        printf("  in-process PTX compiler: nvPTXCompiler %d.%d\n", r->inprocess_major,
               r->inprocess_minor);
    else
        printf("  in-process PTX compiler: none: %s\n", r->inprocess_why);
    printf("  ptxas: %s\n", r->ptxas[0] ? r->ptxas : "not found");
}

/* Every strategy and whether AUTO can choose it on this machine. */
static void json_strategies(json_writer *w, const spf_device_info *dev)
{
    json_array_begin(w, "strategies");
    for (int i = 0; i < strategy_count; i++) {
        char why[768] = "";
        int ok = strategy_available(strategy_table[i], dev, why, sizeof why);
        json_object_begin(w, NULL);
        json_string(w, "name", strategy_table[i]->name);
        json_bool(w, "available", ok);
        json_string(w, "reason", ok ? NULL : why);
        json_object_end(w);
    }
    json_array_end(w);
}

static void print_strategies(const spf_device_info *dev)
{
    printf("strategies:\n");
    for (int i = 0; i < strategy_count; i++) {
        char why[768] = "";
        int ok = strategy_available(strategy_table[i], dev, why, sizeof why);
        printf("  %-10s %s%s\n", strategy_table[i]->name, ok ? "available" : "unavailable: ",
               ok ? "" : why);
    }
}

int cmd_info(const cli_command *cmd, int argc, char **argv)
{
    cli_context ctx;
    int rc = cli_parse(&ctx, cmd, NULL, 0, argc, argv);
    if (rc != CLI_CONTINUE)
        return rc;
    spf_device_info dev;
    spf_status st = spf_device_query(0, &dev);
    if (st != SPF_OK)
        return cli_fail_status(&ctx, st);
    assembler_report asm_report;
    assembler_describe(&asm_report);
    if (ctx.json) {
        json_writer w;
        cli_json_begin(&w, &ctx);
        json_string(&w, "version", spf_version());
        cli_json_device(&w, "device", &dev);
        json_int(&w, "host_cores", parallel_default_threads());
        json_assembler(&w, &asm_report);
        json_strategies(&w, &dev);
        return cli_json_end(&ctx, &w);
    }
    printf("spforge %s\n", spf_version());
    cli_print_device(&dev);
    printf("host cores: %d\n", parallel_default_threads());
    print_assembler(&asm_report);
    print_strategies(&dev);
    return CLI_EXIT_OK;
}
