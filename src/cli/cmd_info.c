/* spforge info: what this build and machine offer. */
#include "cli/cli.h"

#include <stdio.h>

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
    if (ctx.json) {
        json_writer w;
        cli_json_begin(&w, &ctx);
        json_string(&w, "version", spf_version());
        cli_json_device(&w, "device", &dev);
        json_int(&w, "host_cores", cli_host_cores());
        return cli_json_end(&ctx, &w);
    }
    printf("spforge %s\n", spf_version());
    cli_print_device(&dev);
    printf("host cores: %d\n", cli_host_cores());
    return CLI_EXIT_OK;
}
