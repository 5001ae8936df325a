// CLibgit2Startup: see no_ca_certificates.c.
#ifndef CLIBGIT2_STARTUP_H
#define CLIBGIT2_STARTUP_H

/// 1 when libgit2's start-up in this process calls the definitions in no_ca_certificates.c (so it
/// loads no CA certificates), 0 when it would call mbedTLS's.
int concord_libgit2_skips_ca_certificates(void);

#endif
