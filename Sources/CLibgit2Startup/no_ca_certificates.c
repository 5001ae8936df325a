// Debian's libgit2 1.5.1 is built with mbedTLS, and its git_libgit2_init() loads and parses every
// CA certificate in /etc/ssl/certs/ca-certificates.crt (~140 PEM certificates, ~6 ms) for HTTPS
// remotes. Concord has none: a remote is a path or an ssh URL (RemoteLocation refuses the rest),
// and ssh host keys are checked against Concord's own known_hosts. Every concord process pays
// that parse all the same: each sshd connection's forced command, each hook, each merge driver.
//
// These two definitions take the place of mbedTLS's for libgit2 (the executable's symbols come
// first in the dynamic linker's lookup; libgit2 calls them only from that start-up load). They
// load nothing and report success, so libgit2 starts with an empty CA chain. An HTTPS connection
// made through this process's libgit2 (by an app embedding ConcordKit, say) then fails its
// certificate check: it fails closed, never trusts more. ConcordGitTests checks, through
// concord_libgit2_skips_ca_certificates, that the dynamic linker resolves libgit2's calls here.
#define _GNU_SOURCE
#include <dlfcn.h>
#include "CLibgit2Startup.h"

struct mbedtls_x509_crt;

int mbedtls_x509_crt_parse_file(struct mbedtls_x509_crt *chain, const char *path) {
    (void)chain;
    (void)path;
    return 0;
}

int mbedtls_x509_crt_parse_path(struct mbedtls_x509_crt *chain, const char *path) {
    (void)chain;
    (void)path;
    return 0;
}

int concord_libgit2_skips_ca_certificates(void) {
    // What libgit2's call resolves to: the first definition in the process's global lookup scope.
    void *used = dlsym(RTLD_DEFAULT, "mbedtls_x509_crt_parse_file");
    return used == (void *)&mbedtls_x509_crt_parse_file;
}
