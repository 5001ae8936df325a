#ifndef CONCORD_CSQLITE_SHIM_H
#define CONCORD_CSQLITE_SHIM_H
/* The system SQLite (the one GRDB links, libsqlite3-dev on Debian), for the record index's
   read-only SQL entry (ConcordKit's Index/ReadOnlySQLConnection.swift) alone: what Swift cannot
   call directly (sqlite3_db_config is variadic; SQLITE_TRANSIENT is a cast). */
#include <sqlite3.h>

/* Sets an integer option of sqlite3_db_config; the option's value afterwards, -1 when refused. */
static inline int concord_sqlite3_db_config(sqlite3 *db, int option, int value) {
    int now = -1;
    if (sqlite3_db_config(db, option, value, &now) != SQLITE_OK) return -1;
    return now;
}

/* Binds text or a blob that SQLite copies (SQLITE_TRANSIENT). */
static inline int concord_sqlite3_bind_text(sqlite3_stmt *statement, int index, const char *text, int bytes) {
    return sqlite3_bind_text(statement, index, text, bytes, SQLITE_TRANSIENT);
}
#endif
