#include "plan/info_json.h"

static void json_time(json_writer *w, const char *key, double us)
{
    if (us > 0)
        json_double(w, key, us);
    else
        json_null(w, key);
}

void plan_info_json_fields(json_writer *w, const spf_plan_info *i)
{
    json_string(w, "strategy", spf_strategy_name(i->strategy));
    json_string(w, "kernel", i->kernel_name);
    json_string(w, "config", i->config);
    json_string(w, "dtype", spf_dtype_name(i->dtype));
    json_string(w, "math", spf_math_name(i->math));
    json_string(w, "b_layout", spf_layout_name(i->b_layout));
    json_string(w, "c_layout", spf_layout_name(i->c_layout));
    json_int(w, "registers", i->registers);
    json_int(w, "code_bytes", i->code_bytes);
    json_int(w, "configs_tried", i->configs_tried);
    json_double(w, "generate_s", i->generate_s);
    json_double(w, "compile_s", i->compile_s);
    json_string(w, "assembler", i->assembler[0] ? i->assembler : NULL);
    json_double(w, "link_s", i->link_s);
    json_double(w, "load_s", i->load_s);
    json_double(w, "tune_s", i->tune_s);
    json_double(w, "verify_s", i->verify_s);
    json_time(w, "kernel_us", i->kernel_us);
    json_double(w, "verify_error", i->verify_error);
    json_bool(w, "from_cache", i->from_cache);
    json_int(w, "device_bytes", i->device_bytes);
    json_double(w, "plan_s", i->plan_s);
    json_array_begin(w, "candidates");
    for (int c = 0; c < i->candidate_count && c < SPF_MAX_CANDIDATES; c++) {
        const spf_candidate *d = &i->candidates[c];
        json_object_begin(w, NULL);
        json_string(w, "strategy", spf_strategy_name(d->strategy));
        json_string(w, "outcome", spf_candidate_outcome_name(d->outcome));
        json_time(w, "estimate_us", d->estimate_us);
        json_time(w, "kernel_us", d->kernel_us);
        json_string(w, "detail", d->detail);
        json_object_end(w);
    }
    json_array_end(w);
}
