/* Internal to the config loader (config.c, config_keys.c): the loader's state, the key table
 * type and the helpers the key setters use.  Nothing outside allowlist/config*.c includes it. */
#ifndef EGRESSD_ALLOWLIST_CONFIG_INTERNAL_H
#define EGRESSD_ALLOWLIST_CONFIG_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <yaml.h>

#include "allowlist/config.h"

#define CFG_TOKEN_MAX 4096 /* longest token read from a tokenFile */
#define CFG_NAME_MAX 64    /* longest session or bound name */
#define CFG_KEYS_MAX 16    /* most keys in one key table */
#define CFG_PATH_MAX 512   /* key path text, e.g. sessions.default.limits.maxBytesOut */
#define CFG_SEGMENT_MAX 64 /* longest key shown in a path before "..." */
#define CFG_QUOTE_BUF 96   /* a user value quoted in a message */
#define CFG_MSG_MAX 1024   /* one error line */
#define CFG_FILE_PATH_MAX 4096 /* a file path after joining it to the config's folder */

struct cfg_err {
	unsigned long line; /* 1-based; 0 when the error has no position */
	unsigned long col;  /* 1-based */
	char *text;         /* the whole line, owned */
};

/* A bound while it is being read (named under bounds: or inline in a session). */
struct cfg_bound_work {
	struct allow_bound b;   /* the bound itself; valid only when ready */
	int ready;              /* allow_bound_init succeeded, so b must be freed */
	yaml_node_t *allow_key; /* the allowDomains key, for the "needs sandbox" check */
};

struct cfg_named_bound {
	char *name;       /* owned */
	yaml_node_t *key; /* where it was defined */
	struct cfg_bound_work w;
};

/* A session while it is being read; s moves into the config only when there was no error. */
struct cfg_session_work {
	struct allow_session_config s; /* name, limits, token, clients; s.bound is built later */
	int bound_ready;               /* s.bound was initialised */
	yaml_node_t *key;              /* the session's name */
	yaml_node_t *bounds;           /* its bounds: list, resolved once every bound is known */
	struct cfg_bound_work inl;     /* its bound: */
	yaml_node_t *token_key;        /* auth.token key, when given */
	yaml_node_t *token_file_key;   /* auth.tokenFile key, when given */
};

struct cfg_loader {
	const char *name;     /* file name for messages */
	char *dir;            /* the config's folder, for relative tokenFile paths */
	yaml_document_t *doc; /* the loaded tree (second pass) */
	struct cfg_err *errs;
	size_t nerrs;
	int overflow;            /* CFG_MAX_ERRORS reached */
	int oom;                 /* "out of memory" already reported */
	char path[CFG_PATH_MAX]; /* the key path of the node being read */
	size_t plen;
	struct allow_config *cfg;
	struct cfg_named_bound *bounds; /* bounds: in file order */
	size_t nbounds;
	struct cfg_session_work *sw; /* sessions: in file order */
	size_t nsw;
	const struct allow_config *base; /* a session body: the running config, for bounds: names */
	int body;                        /* reading a session body, not a config file */
};

/* One key of a mapping.  set reads val (the key node is there for messages) into base + off. */
struct cfg_key {
	const char *name;
	int (*set)(struct cfg_loader *ld, const struct cfg_key *k, yaml_node_t *key,
	        yaml_node_t *val, void *base);
	size_t off;                /* the field, from the start of the mapping's struct */
	size_t off_n;              /* lists: the count field */
	const struct cfg_key *sub; /* nested mappings: their table */
	uint64_t min;              /* numbers: the smallest value accepted */
	int kind;                  /* allowDomains / domains: the allow_set_kind */
	uint16_t default_port; /* address lists: the port of an entry without one; 0 = required */
	size_t off_at;         /* file paths: the struct allow_pos that gets the value's place */
};

/* Error lines: "FILE:LINE:COL: KEY.PATH: message" at node (or "FILE: message" for NULL).  A
 * loader keeps going after each: every error is collected, then the config is refused. */
__attribute__((format(printf, 3, 4))) void allow_cfg_err_at(
        struct cfg_loader *ld, const yaml_node_t *node, const char *fmt, ...);
void allow_cfg_err_oom(struct cfg_loader *ld, const yaml_node_t *node);
/* "expected EXPECTED, got a list" and the like. */
void allow_cfg_err_type(struct cfg_loader *ld, const yaml_node_t *n, const char *expected);

/* s[0..len) double-quoted and escaped into buf (shortened to fit cap); returns buf. */
const char *allow_cfg_quote(char *buf, size_t cap, const char *s, size_t len);

/* The key path shown in errors: push a key or "[i]", pop back to what push returned. */
size_t allow_cfg_path_push(struct cfg_loader *ld, const char *seg, size_t len);
size_t allow_cfg_path_push_index(struct cfg_loader *ld, size_t i);
void allow_cfg_path_pop(struct cfg_loader *ld, size_t old);

/* The text of a scalar that must hold a value (NUL-terminated, *len set), or NULL after
 * reporting "expected EXPECTED, got ...".  The text belongs to the document. */
const char *allow_cfg_scalar_text(
        struct cfg_loader *ld, yaml_node_t *n, const char *expected, size_t *len);
/* A mapping key as text, or NULL after reporting that keys must be non-empty strings. */
const char *allow_cfg_key_text(struct cfg_loader *ld, yaml_node_t *key, size_t *len);
yaml_node_t *allow_cfg_node_get(struct cfg_loader *ld, int id);
size_t allow_cfg_seq_len(const yaml_node_t *n);
size_t allow_cfg_map_len(const yaml_node_t *n);

/* Reads mapping n into base through table (terminated by a NULL name): each key at most once,
 * each known; -1 only when n is not a mapping (every other error is reported and skipped). */
int allow_cfg_walk(struct cfg_loader *ld, yaml_node_t *n, const struct cfg_key *table, void *base);

/* config_keys.c: the top-level table, and the pass after the walk that resolves each session's
 * bounds: names, merges its bound (docs/design.md 4.3) and checks it (4.5). */
extern const struct cfg_key allow_cfg_top_keys[];
void allow_cfg_sessions_finish(struct cfg_loader *ld);
/* A session body (ld->body): root is the body's mapping, or NULL for an empty body. */
void allow_cfg_session_body(struct cfg_loader *ld, const char *name, yaml_node_t *root);

#endif
