/*
 * dlock — the Redisson YAML reader in a build without it (make
 * WITH_YAML=0: the Makefile compiles this file instead of
 * redisson_yaml.c,
 * and libdlock needs no libyaml). Every dlock_client_from_redisson_yaml_*
 * call fails with DLOCK_ENOTSUP and a detail that says why
 * (dlock_version_info() lists no "yaml"); the JSON configuration is
 * unaffected.
 */
#include "dlock/errors.h"

#include "backends/redis/redisson_yaml.h"
#include "core/errbuf.h"

int dlock__redisson_yaml_parse_from(dlock__config *out, const dlock_config_defaults *d,
                                    const char *text, size_t len, char *errbuf,
                                    size_t errlen)
{
    (void)out, (void)d, (void)text, (void)len;
    return dlock__fail_into(errbuf, errlen, DLOCK_ENOTSUP,
                            "this libdlock was built without the Redisson YAML "
                            "reader (make WITH_YAML=0): use a JSON configuration");
}

int dlock__redisson_yaml_parse(dlock__config *out, const char *text, size_t len,
                               char *errbuf, size_t errlen)
{
    return dlock__redisson_yaml_parse_from(out, NULL, text, len, errbuf, errlen);
}
