//! Differential tests: our unit resolution against a real systemd 252 user
//! manager. Each case is a unit (plus drop-ins) whose ExecStart runs the
//! recorder; the argv systemd exec'd must equal what our loader and
//! exec-time expansion give, and systemd's FragmentPath/DropInPaths must
//! equal ours. Cases that systemd refuses must be refused by us too.

use crate::support::{readme_figures, scratch_dir, systemd_oracle};

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use kubelet_labeler::node::sorted::SortedMap;
use kubelet_labeler::node::unit::{self, Host, LoadOptions, UnitPaths};
use systemd_oracle::{Outcome, UserRun};

/// One case: files relative to the scratch dir (`u1/`, `u2/`, `u3/` are the
/// search path, highest first); `{R}` is the recorder, `{S}` the scratch dir.
pub(crate) struct Case {
    pub(crate) unit: String,
    pub(crate) files: Vec<(String, String)>,
}

fn simple(n: usize, body: &str) -> Case {
    let unit = format!("c{n:03}.service");
    Case {
        files: vec![(format!("u1/{unit}"), format!("[Service]\n{body}\n"))],
        unit,
    }
}

/// ExecStart lines (and a few settings) of single-file cases.
const SINGLE: &[&str] = &[
    // syntax: comments, continuation, trimming
    "ExecStart={R} a # b #c",
    "ExecStart={R} one \\\n          two\\\nthree",
    "ExecStart={R} one \\\n# c \\\n; c2\n   two",
    "ExecStart={R} \"a \\\nb\" c",
    "ExecStart={R} x\\\\\nEnvironment=A=1",
    "ExecStart={R} a \\   ",
    "ExecStart={R} a \\\n\n  b",
    "ExecStart   =   {R}   spaced   \t",
    "execstart={R} lower\nExecStart={R} upper",
    ".include /x\nExecStart={R} inc",
    "ExecStart={R} tab\there",
    "ExecStart={R}\tleading-tab",
    "ExecStart={R} trailing-backslash-eof \\",
    "ExecStart={R} a\\\\\\\n b",
    // quoting
    "ExecStart={R} \"a b\" 'c d' a\"b c\"d \"\" '' \"it's\" 'say \"hi\"' 'a'\"b\"c",
    "ExecStart={R} \"a\"b 'x'\"y\" \"mid\"dle\"quote\" -o\"k=v\" --flag=\"x y\"",
    "ExecStart={R} 'single \\x41 \\\\ \\' end' \"dq \\x41 \\\\ \\\" end\"",
    "ExecStart={R} \"\" \"\" x",
    "ExecStart={R} \"  spaces  \" '\t'",
    "ExecStart={R} 'a\"b' \"a'b\"",
    "ExecStart={R} \"abc",
    "ExecStart={R} 'abc",
    "ExecStart=-{R} \"abc\nExecStart={R} after-unbalanced",
    "ExecStart={R} ok \"unterminated\\\"",
    // escapes
    "ExecStart={R} \\x41 \\101 \\u00e9 \\U0001F600 a\\sb \\t x\\\\y \\\"q\\\" 'a\\nb' \"c\\td\" \\'",
    "ExecStart={R} \\d \\$HOME a\\ b \\x4 \\x00 \\8 end",
    "ExecStart={R} \\x41\\x42 pre\\x20post \"\\x22\"",
    "ExecStart={R} \\a\\b\\f\\v\\r",
    "ExecStart={R} \\000 \\400 \\377x",
    "ExecStart={R} \\u0000 \\U00110000 \\uD800x",
    "ExecStart={R} \\u00 \\U0001F60",
    "ExecStart={R} \\s\\s \"\\s\"",
    "ExecStart={R} \\q \"\\q\" '\\q'",
    "ExecStart={R} \\\\\\\\ \\\\n",
    "ExecStart={R} \\x7a\\x7A \\172",
    "ExecStart={R} a\\;b",
    // prefixes
    "ExecStart=@{R} myname a b",
    "ExecStart=@{R}",
    "ExecStart=:{R} $X ${X} $$ a$$b %n\nEnvironment=X=x",
    "ExecStart=+@-:{R} zero ${X}\nEnvironment=X=x",
    "ExecStart=:-@+{R} zero2 ${X}\nEnvironment=X=x",
    "ExecStart=+!{R} x",
    "ExecStart=!!{R} bangbang",
    "ExecStart=!{R} bang",
    "ExecStart=!!@{R} zero x",
    "ExecStart=--{R} x\nExecStart={R} after-double-dash",
    "ExecStart=\"@{R}\" zero q",
    "ExecStart=-/nonexistent/x\nExecStart={R} after-missing\nType=oneshot",
    "ExecStart=./recx x",
    "ExecStart=@@{R} a b",
    "ExecStart=::{R} a",
    "ExecStart={R}/ x",
    "ExecStart=-@ x",
    "ExecStart=\"{R} \" x",
    "ExecStart={R}\\x22 x",
    "ExecStart=-",
    "ExecStart=@-{R} zero $X\nEnvironment=X=ex",
    // ; separator and counts
    "ExecStart={R} a;b \";\" \\; x\\; ';' \"\\;\"",
    "Type=oneshot\nExecStart={R} one ; {R} two",
    "ExecStart={R} one ; {R} two",
    "ExecStart={R} z ;",
    "ExecStart={R} first\nExecStart=\nExecStart={R} second",
    "ExecStart={R} first\nExecStart={R} second",
    "Type=oneshot\nExecStart={R} first\nExecStart={R} second",
    "Type=oneshot\nExecStart={R} a ; ; {R} b",
    "ExecStart=; {R} leading-semicolon",
    "ExecStart={R} a ;b",
    "ExecStart={R} a; b",
    "Type=oneshot\nExecStart={R} a ;\t{R} tab-sep",
    "ExecStart=",
    "Type=oneshot\nRemainAfterExit=yes\nExecStart={R} one\nExecStart=\nExecStart={R} two\nExecStart={R} three",
    // specifiers
    "ExecStart={R} %n %N %p %P %i %I %j %J %f %% 100% a%-b %",
    "ExecStart={R} %t %u %U %h %g %G",
    "ExecStart={R} %z",
    "ExecStart=-{R} %z\nExecStart={R} after-bad-specifier",
    "ExecStart={R} \\x25n \"%%n\" '%n' %%%n",
    "ExecStart={R} %D",
    "ExecStart={R} %H %m %b %v %a %o %w",
    "ExecStart={R} %%%% %%z %%",
    "ExecStart={R} pre%npost",
    "ExecStart={R} %y %Y",
    "ExecStart={R} %",
    "ExecStart={R} %.",
    // environment and $-expansion
    "Environment=\"ONE=one\" 'TWO=two two'\nExecStart={R} $ONE $TWO ${TWO}",
    "Environment=ONE='one' \"TWO='two two' too\" THREE=\nExecStart={R} ${ONE} ${TWO} ${THREE} $ONE $TWO $THREE",
    "ExecStart={R} [ $UNDEF ${UNDEF} x${UNDEF}y ]",
    "Environment=FOO=foo BAR=\"b a r\"\nExecStart={R} $FOO/x pre$FOO ${FOO}/x $$FOO $$ $ a$$b ${FOO:-d} $FOO$BAR \"$BAR\" '${BAR}' ${FOO}${BAR} $BAR ${ FOO} $FOO_ ${FOO",
    "Environment=\"V=a \\\"b c\\\" d\\\\ e 'f g' \\\\x41 h\\\\\" \"W=x \\\"y z\"\nExecStart={R} $V ${V} $W",
    "Environment=BIN={R}\nExecStart=${BIN} x",
    "Environment=Z=\"p q\"\nExecStart=@{R} $Z a",
    "Environment=A=1 \"B=\\d\" C=3\nExecStart={R} [$A] [$B] [$C]",
    "Environment=U=%n X=$HOME\nExecStart={R} ${U} $X ${X}",
    "Environment=FOO=x\nUnsetEnvironment=FOO\nExecStart={R} [${FOO}] $FOO",
    "Environment=EMPTY= SP=\" \"\nExecStart={R} [ $EMPTY $SP ${EMPTY} ]",
    "Environment=A=1\nExecStart={R} $A${A} ${A}$A $$A$A",
    "Environment=A=1\nEnvironment=\nEnvironment=B=2\nExecStart={R} [${A}] [${B}]",
    "Environment=A=1 A=2\nExecStart={R} ${A}",
    "Environment=A=first\nEnvironment=A=second\nExecStart={R} ${A}",
    "Environment=9BAD=x GOOD=y\nExecStart={R} [${9BAD}] [${GOOD}]",
    "Environment=A-B=x C=y\nExecStart={R} [${A-B}] [${C}]",
    "Environment=NOEQ C=y\nExecStart={R} [${NOEQ}] [${C}]",
    "Environment=Q=\"a\\x41b\"\nExecStart={R} ${Q}",
    "Environment=Q=a%%b\nExecStart={R} ${Q}",
    "Environment=L=\"x\\ny\"\nExecStart={R} ${L} $L",
    "Environment=S=\"a  b\"\nExecStart={R} \"${S}\" $S",
    "Environment=S=\"'quoted words' more\"\nExecStart={R} $S",
    "Environment=S=\"a\\\\\\\\b\"\nExecStart={R} $S ${S}",
    "Environment=N=n\nExecStart={R} ${N}${N}${N} $${N} $$$N",
    "Environment=N=n\nExecStart={R} ${N:+x} ${N=d} ${N}}",
    "Environment=N=n\nExecStart={R} \\${N} '$N' \"${N}\"",
    "Environment=EQ=a=b=c\nExecStart={R} ${EQ} $EQ",
    "Environment=HOME=/override\nExecStart={R} $HOME ${HOME}",
    "Environment=\"A=1\" \"B=2 3\" 'C=4'\nExecStart={R} $A $B $C",
    "Environment=X=%%n\nExecStart={R} ${X}",
    "Environment=A=1 \"unbalanced\nExecStart={R} [${A}]",
    "Environment=\"A=1\" B=2\\ 3\nExecStart={R} [${A}] [${B}]",
    "UnsetEnvironment=HOME\nExecStart={R} [${HOME}]",
    "Environment=K=v\nUnsetEnvironment=K=other\nExecStart={R} [${K}]",
    "Environment=K=v\nUnsetEnvironment=K=v\nExecStart={R} [${K}]",
    "Environment=W=\"a\tb\"\nExecStart={R} $W",
    "Environment=T=\"x 'y\"\nExecStart={R} $T",
    "Environment=T=\"trail\\\\\\\\\"\nExecStart={R} $T",
    // relative names and paths
    "ExecSearchPath={S}/bin\nExecStart=recx rel",
    "ExecSearchPath={S}/nope:{S}/bin\nExecStart=recx rel2",
    "ExecStart={S}//bin/./recx x",
    "ExecStart=\"{S}/bin/recx\" quoted-path",
    "ExecStart={S}/bin/rec\\x78 escaped-path",
    "Environment=PATH=/nonexistent\nExecSearchPath={S}/bin\nExecStart=recx path-ignored",
    // each ExecSearchPath= line appends; one with a specifier systemd
    // cannot resolve keeps the words before it and drops the rest
    "ExecSearchPath={S}/bin\nExecSearchPath=/nonexistent\nExecStart=recx appended",
    "ExecSearchPath={S}/bin:/usr/%Z:/nonexistent\nExecStart=recx partial",
    // a line systemd ignores alone: its specifier unresolved
    "Environment=A=1 B=2\nUnsetEnvironment=%Z A\nExecStart={R} [${A}] [${B}]",
    "WorkingDirectory=relative\nExecStart={R} relative-working-directory",
    // sections and keys
    "[service]\nExecStart={R} lower-section",
    "[Service] # c\nExecStart={R} bad-header",
    "[X-Custom]\nFoo=bar\n[Service]\nExecStart={R} x-section",
    "[Unit]\nDescription=d\n[Service]\nExecStart={R} unit-then-service",
    "ExecStart = {R} spaced-equals",
    "ExecStart={R} a=b c==d =e",
    "SyslogIdentifier=kubelet\nExecStart={R} syslog",
    "Type=notify\nExecStart={R} notify",
    "Type=simple\nExecStart={R} simple",
    "Type=exec\nExecStart={R} exec",
    "ExecStart={R} long ",
];

/// Multi-file cases: drop-in precedence, shadowing, masking, templates.
fn multi_cases(start: usize) -> Vec<Case> {
    let mut v = Vec::new();
    let mut n = start;
    // `#` is the case's number in paths and in link targets (`@...`).
    let mut add = |unit: &str, files: &[(&str, &str)]| {
        let num = |s: &str| s.replace("#", &format!("{n:03}"));
        let unit = num(unit);
        v.push(Case {
            files: files
                .iter()
                .map(|(p, t)| {
                    let t = if t.starts_with('@') {
                        num(t)
                    } else {
                        t.to_string()
                    };
                    (num(p), t)
                })
                .collect(),
            unit,
        });
        n += 1;
    };
    let frag = "[Service]\nExecStart={R} frag\n";
    let reset = |tag: &str| format!("[Service]\nExecStart=\nExecStart={{R}} {tag}\n");
    let r = |t: &str| reset(t);
    add(
        "d#.service",
        &[
            ("u3/d#.service", "[Service]\nExecStart={R} D10\n"),
            ("u3/d#.service.d/10-a.conf", &r("low10")),
            ("u1/d#.service.d/20-b.conf", &r("high20")),
        ],
    );
    add(
        "d#.service",
        &[
            ("u3/d#.service", frag),
            ("u3/d#.service.d/10-a.conf", &r("low")),
            ("u1/d#.service.d/10-a.conf", "[Service]\nEnvironment=X=1\n"),
        ],
    );
    add(
        "d#.service",
        &[
            ("u3/d#.service", frag),
            ("u3/d#.service.d/10-a.conf", &r("low")),
            ("u1/d#.service.d/10-a.conf", ""),
        ],
    );
    add(
        "d#.service",
        &[
            ("u3/d#.service", frag),
            ("u3/d#.service.d/10-a.conf", &r("low")),
            ("u1/d#.service.d/10-a.conf", "@/dev/null"),
        ],
    );
    add(
        "foo#-bar-baz.service",
        &[
            ("u3/foo#-bar-baz.service", frag),
            ("u1/foo#-.service.d/50-x.conf", &r("foo-")),
            ("u1/foo#-bar-.service.d/50-x.conf", &r("foo-bar-")),
            ("u3/foo#-bar-baz.service.d/50-x.conf", &r("exact")),
        ],
    );
    add(
        "foo#-bar-baz.service",
        &[
            ("u3/foo#-bar-baz.service", frag),
            ("u2/foo#-.service.d/50-x.conf", &r("foo-")),
            ("u2/foo#-bar-baz.service.d/50-x.conf", &r("exact")),
        ],
    );
    add(
        "foo#-bar.service",
        &[
            ("u1/foo#-bar.service", frag),
            ("u1/foo#-.service.d/10-a.conf", &r("prefix")),
            (
                "u1/foo#-bar.service.d/20-b.conf",
                "[Service]\nEnvironment=Y=2\n",
            ),
        ],
    );
    add(
        "d#.service",
        &[
            ("u3/d#.service", frag),
            ("u3/service.d/99-all.conf", &r("type-level")),
            ("u3/d#.service.d/99-all.conf", &r("unit-specific")),
        ],
    );
    add(
        "d#.service",
        &[
            ("u3/d#.service", frag),
            ("u3/d#.service.d/9-b.conf", &r("9b")),
            ("u3/d#.service.d/10-a.conf", &r("10a")),
            ("u3/d#.service.d/a.conf", &r("a")),
            ("u3/d#.service.d/B.conf", &r("B")),
            ("u2/service.d/99-all.conf", "[Service]\nEnvironment=ALL=1\n"),
        ],
    );
    add(
        "tpl#@x.service",
        &[
            ("u2/tpl#@.service", "[Service]\nExecStart={R} tpl %i\n"),
            ("u2/tpl#@.service.d/10.conf", &r("tpl10")),
            (
                "u2/tpl#@.service.d/30.conf",
                "[Service]\nEnvironment=T30=1\n",
            ),
            ("u1/tpl#@x.service.d/10.conf", &r("inst10 %i")),
        ],
    );
    add(
        "tpl#@a-b.service",
        &[(
            "u1/tpl#@.service",
            "[Service]\nExecStart={R} %i %I %j %J %f %p %P %N\n",
        )],
    );
    add(
        "tpl#@x.service",
        &[
            (
                "u1/tpl#@x.service",
                "[Service]\nExecStart={R} instance-file\n",
            ),
            ("u2/tpl#@.service", frag),
        ],
    );
    add(
        "d#.service",
        &[
            ("u2/d#.service", "[Service]\nExecStart={R} u2\n"),
            ("u1/d#.service", "[Service]\nExecStart={R} u1\n"),
        ],
    );
    add(
        "d#.service",
        &[
            ("u3/d#.service", "[Service]\nExecStart={R} u3\n"),
            ("u1/d#.service", "@/dev/null"),
        ],
    );
    // Any character device masks a unit file (systemd's null_or_empty); a
    // drop-in linked to one systemd reads, and drops /dev/urandom's garbage
    // at its first bad line. (One linked to /dev/zero hangs the manager.)
    add(
        "d#.service",
        &[
            ("u3/d#.service", "[Service]\nExecStart={R} u3\n"),
            ("u1/d#.service", "@/dev/zero"),
        ],
    );
    add(
        "d#.service",
        &[
            ("u3/d#.service", "[Service]\nExecStart={R} u3\n"),
            ("u1/d#.service.d/50-random.conf", "@/dev/urandom"),
        ],
    );
    add(
        "d#.service",
        &[
            ("u3/d#.service", "[Service]\nExecStart={R} u3\n"),
            ("u1/d#.service", ""),
        ],
    );
    add(
        "d#.service",
        &[
            ("u1/d#.service", frag),
            (
                "u1/d#.service.d/10.conf",
                "[Service]\nExecStart={R} no-reset\n",
            ),
        ],
    );
    add(
        "d#.service",
        &[
            ("u1/d#.service", frag),
            (
                "u1/d#.service.d/10.conf",
                "[Service]\nExecStart=\nExecStart={R} \"bad\nEnvironment=LOST=1\n",
            ),
        ],
    );
    add(
        "d#.service",
        &[
            ("u1/d#.service", frag),
            (
                "u1/d#.service.d/10.conf",
                "ExecStart=\nExecStart={R} no-section\n",
            ),
        ],
    );
    add(
        "d#.service",
        &[
            ("u1/d#.service", frag),
            ("u1/d#.service.d/10.txt", &r("not-conf")),
            ("u1/d#.service.d/.hidden.conf", &r("hidden")),
        ],
    );
    add(
        "d#.service",
        &[
            ("u1/d#.service", frag),
            (
                "u1/d#.service.d/10.conf",
                "[Service]\nExecStart=\nExecStart={R} a %n\n[Service] x\nExecStart={R} b\n",
            ),
        ],
    );
    add(
        "d#.service",
        &[
            ("u3/d#.service", frag),
            ("u1/d#.service.d/10.conf", "[Service]\nEnvironment=A=drop\n"),
            (
                "u2/d#.service.d/20.conf",
                "[Service]\nExecStart=\nExecStart={R} ${A}\n",
            ),
        ],
    );
    add(
        "d#.service",
        &[
            ("u2/d#.service", frag),
            ("u1/d#.service.d/zz.conf", &r("zz")),
            ("u3/d#.service.d/~last.conf", &r("tilde")),
        ],
    );
    add(
        "d#.service",
        &[
            ("u2/d#.service", frag),
            ("u2/d#.service.d/10.conf", "[Service]\nExecStart=\n"),
        ],
    );
    add(
        "d#.service",
        &[
            ("u1/d#.service", "[Unit]\nDescription=no service section\n"),
            ("u1/d#.service.d/10.conf", &r("from-dropin")),
        ],
    );
    add(
        "d#.service",
        &[("u1/d#.service.d/10.conf", &r("dropin-only"))],
    );
    add(
        "d#.service",
        &[
            ("u1/d#.service", frag),
            (
                "u1/d#.service.d/10.conf",
                "[Service]\nExecStart=\nExecStart=-{R} %z\nExecStart={R} after\n",
            ),
        ],
    );
    add(
        "a#-b-.service",
        &[
            ("u1/a#-b-.service", frag),
            ("u1/a#-.service.d/10.conf", &r("a-")),
        ],
    );
    add(
        "d#.service",
        &[
            ("u1/d#.service", frag),
            (
                "u1/d#.service.d/10.conf",
                "[Service]\r\nExecStart=\r\nExecStart={R} crlf\r\n",
            ),
        ],
    );
    add(
        "d#.service",
        &[("u1/d#.service", "\u{feff}[Service]\nExecStart={R} bom\n")],
    );
    // An EnvironmentFile= with `..` is ignored (not normalized), `-` or
    // not; the one beside it is read.
    for (dash, env) in [("-", "env-optional"), ("", "env")] {
        let unit = format!(
            "[Service]\nEnvironmentFile={dash}{{S}}/batch0/{env}/../{env}/a.env\n\
             EnvironmentFile={{S}}/batch0/{env}/b.env\nExecStart={{R}} [${{A}}] [${{B}}]\n"
        );
        add(
            "e#.service",
            &[
                ("u1/e#.service", &unit),
                (&format!("{env}/a.env"), "A=climbed\n"),
                (&format!("{env}/b.env"), "B=plain\n"),
            ],
        );
    }
    // A NUL byte anywhere in an environment file: systemd refuses the
    // whole file (review 43 r43a F1): an optional one sets nothing, another
    // fails the start.
    for (dash, env) in [("-", "nul-optional"), ("", "nul")] {
        let unit = format!(
            "[Service]\nEnvironmentFile={dash}{{S}}/batch0/{env}/a.env\n\
             EnvironmentFile={{S}}/batch0/{env}/b.env\nExecStart={{R}} [${{A}}] [${{B}}]\n"
        );
        add(
            "e#.service",
            &[
                ("u1/e#.service", &unit),
                (&format!("{env}/a.env"), "A=1\nC=2\u{0}\n"),
                (&format!("{env}/b.env"), "B=plain\n"),
            ],
        );
    }
    add(
        "d#.service",
        &[("u1/d#.service", "[Service]\nExecStart={R} bad-utf8 \u{0}\n")],
    );
    // An alias's drop-ins apply to the unit (they were left out): after
    // the unit's own name's, whose same-named file wins from any directory.
    add(
        "d#.service",
        &[
            ("u2/d#.service", frag),
            ("u1/al#.service", "@../u2/d#.service"),
            ("u1/al#.service.d/10.conf", &r("alias-dropin")),
        ],
    );
    add(
        "d#.service",
        &[
            ("u2/d#.service", frag),
            ("u2/al#.service", "@d#.service"),
            ("u1/al#.service.d/10.conf", &r("alias-dropin")),
            ("u3/d#.service.d/10.conf", &r("own-name-dropin")),
            ("u1/al#.service.d/20.conf", "[Service]\nEnvironment=AL=1\n"),
        ],
    );
    // A drop-in that is a directory: systemd lists it and skips it (the
    // wrapper refused the unit).
    add(
        "d#.service",
        &[
            ("u1/d#.service", frag),
            ("u1/d#.service.d/50-dir.conf/x", "x"),
            ("u1/d#.service.d/60.conf", &r("after-dir")),
        ],
    );
    // A form feed is no whitespace to systemd: not trimmed off a key or a
    // value (an `ExecStart=` so written reset the command for us).
    add(
        "d#.service",
        &[
            ("u1/d#.service", frag),
            (
                "u1/d#.service.d/10.conf",
                "[Service]\nExecStart=\nExecStart={R} kept\n\u{c}ExecStart=\nExecStart=\u{c}\n",
            ),
        ],
    );
    // Line ends of several bytes, a byte order mark past the first line,
    // and what ends systemd's parse of a drop-in (the lines after it are
    // not applied): each used to give another command than systemd's.
    let pad = "x".repeat(kubelet_labeler::node::unit::syntax::LONG_LINE_MAX);
    for dropin in [
        "[Service]\nExecStart=\nExecStart={R} a \\\n\rnext-line\n".to_string(),
        "[Service]\nExecStart=\nExecStart={R} a \\\n\0next-line\n".into(),
        "[Service]\nExecStart=\n\u{feff}ExecStart={R} bom-on-line-3\n".into(),
        "[Service]\nExecStart=\nExecStart={R} first\n[X-\"q\"]\n[Service]\nExecStart=\nExecStart={R} after\n".into(),
        "[Service]\nExecStart=\nExecStart={R} first\nX-A=\u{fffe}\nExecStart=\nExecStart={R} after\n".into(),
        format!("[Service]\nExecStart=\nExecStart={{R}} first\nX-A={pad}\nExecStart=\nExecStart={{R}} after\n"),
    ] {
        add(
            "d#.service",
            &[("u1/d#.service", frag), ("u1/d#.service.d/10.conf", &dropin)],
        );
    }
    // A drop-in directory that is a link: a relative one counts only where
    // its target, taken from `/` (the manager's working directory), is a
    // directory; an absolute one is followed; a relative link to a drop-in
    // file is read (review 9 F7: the relative directory link was followed).
    add(
        "d#.service",
        &[
            ("u1/d#.service", frag),
            ("shared#.d/10-x.conf", &r("from-linked-dir")),
            ("u1/d#.service.d", "@../shared#.d"),
        ],
    );
    add(
        "d#.service",
        &[
            ("u1/d#.service", frag),
            ("u1/shared#-x/10-x.conf", &r("from-sibling-dir")),
            ("u1/d#.service.d", "@shared#-x"),
        ],
    );
    add(
        "d#.service",
        &[
            ("u1/d#.service", frag),
            ("../abs#.d/10-x.conf", &r("from-absolute-link")),
            ("u1/d#.service.d", "@{S}/abs#.d"),
        ],
    );
    // `usr/lib` from `/` is a directory: the link counts, followed from
    // where it is.
    add(
        "d#.service",
        &[
            ("u1/d#.service", frag),
            ("u2/usr/lib/10-x.conf", &r("relative-root-dir")),
            ("u2/d#.service.d", "@usr/lib"),
        ],
    );
    add(
        "d#.service",
        &[
            ("u1/d#.service", frag),
            ("u3/x#-dropin.conf", &r("linked-file")),
            ("u3/d#.service.d/10-x.conf", "@../x#-dropin.conf"),
        ],
    );
    // A line systemd 252 ignores alone (a specifier it does not know) must
    // not make us ignore the rest of its drop-in: the later `Environment=`
    // applies, and the drop-in's command is the one run (review 12: the
    // wrapper ran the fragment's, without the drop-in's taint). Without
    // `-`, WorkingDirectory= fails the file: the rest is ignored.
    let base = "[Service]\nEnvironment=X=base\nExecStart={R} [${X}]\n";
    for line in [
        "EnvironmentFile=-/nonexistent/%Z.env",
        "UnsetEnvironment=%Z",
        "ExecSearchPath=/usr/%Z",
        "WorkingDirectory=-/tmp/%Z",
        "SyslogIdentifier=%Z",
        "WorkingDirectory=/tmp/%Z",
    ] {
        let dropin = format!("[Service]\n{line}\nEnvironment=X=later\n");
        add(
            "d#.service",
            &[
                ("u1/d#.service", base),
                ("u1/d#.service.d/95-site.conf", &dropin),
            ],
        );
    }
    add(
        "d#.service",
        &[
            ("u1/d#.service", "[Service]\nExecStart={R} fragment\n"),
            (
                "u1/d#.service.d/50-site.conf",
                "[Service]\nWorkingDirectory=-/tmp/%Z\nExecStart=\n\
                 ExecStart={R} --register-with-taints=site.example.com/dedicated=db:NoSchedule\n",
            ),
        ],
    );
    // `EnvironmentFile=` globs as systemd's glob(3) expands them: X=base
    // from a plain file, then X=glob from the file the pattern may match
    // (review 12: classes, escapes, `]` first and a leading `.` missed it).
    for (n, (pattern, name)) in [
        ("[[:alpha:]]*.env", "k.env"),
        ("a\\*.env", "a*.env"),
        ("k\\.env", "k.env"),
        (".*.env", ".k.env"),
        ("[]k]*.env", "k.env"),
        ("*.env", ".k.env"),
        ("[!a-j]?.env", "k1.env"),
        ("[^[:digit:]]*", "k.env"),
    ]
    .into_iter()
    .enumerate()
    {
        let unit = format!(
            "[Service]\nEnvironmentFile={{S}}/batch0/glob{n}/base\n\
             EnvironmentFile=-{{S}}/batch0/glob{n}/{pattern}\nExecStart={{R}} [${{X}}]\n"
        );
        add(
            "g#.service",
            &[
                ("u1/g#.service", &unit),
                (&format!("glob{n}/base"), "X=base\n"),
                (&format!("glob{n}/{name}"), "X=glob\n"),
            ],
        );
    }
    v
}

pub(crate) fn scratch_files(scratch: &Path, case: &Case, recorder: &Path) {
    let bin = recorder.parent().unwrap().parent().unwrap();
    for (rel, text) in &case.files {
        let path = scratch.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let text = text
            .replace("{R}", &recorder.display().to_string())
            .replace("{S}", &bin.display().to_string());
        if let Some(target) = text.strip_prefix('@') {
            std::os::unix::fs::symlink(target, &path).unwrap();
        } else {
            std::fs::write(&path, text).unwrap();
        }
    }
}

pub(crate) fn user_manager_specifiers(scratch: &Path) -> Host {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    let os = |field: &str| {
        read("/etc/os-release")
            .lines()
            .find_map(|l| {
                l.strip_prefix(&format!("{field}="))
                    .map(|v| v.trim_matches('"').to_string())
            })
            .unwrap_or_default()
    };
    let mut m = SortedMap::new();
    m.insert('t', scratch.join("xdg-runtime").display().to_string());
    for (c, v) in [
        ('u', "root"),
        ('U', "0"),
        ('h', "/root"),
        ('g', "root"),
        ('G', "0"),
    ] {
        m.insert(c, v.to_string());
    }
    m.insert('H', read("/proc/sys/kernel/hostname"));
    m.insert('m', read("/etc/machine-id"));
    m.insert(
        'b',
        read("/proc/sys/kernel/random/boot_id").replace('-', ""),
    );
    m.insert('v', read("/proc/sys/kernel/osrelease"));
    m.insert('a', "x86-64".to_string());
    m.insert('o', os("ID"));
    m.insert('w', os("VERSION_ID"));
    Host::Fixed(m)
}

/// Compare one case; returns a description of the mismatch, if any.
pub(crate) fn compare(
    case: &Case,
    outcome: Option<&Outcome>,
    paths: &UnitPaths,
    spec: &Host,
) -> Result<(), String> {
    let outcome = outcome.ok_or("systemd reported nothing")?;
    let unshowable = outcome.unshowable();
    let ours = unit::load_service(
        paths,
        &case.unit,
        &LoadOptions {
            specifiers: Some(spec.clone()),
            ..Default::default()
        },
    );
    if !outcome.loaded() && !unshowable {
        return match ours {
            Err(_) => Ok(()),
            Ok(svc) => Err(format!(
                "systemd: LoadState={} but we loaded it: {:?}",
                outcome.prop("LoadState"),
                svc.exec_start
            )),
        };
    }
    let svc = ours.map_err(|e| format!("systemd loaded it, we refused: {e:#}"))?;
    let frag = svc
        .fragment
        .as_ref()
        .map(|f| f.display().to_string())
        .unwrap_or_default();
    if !unshowable && frag != outcome.prop("FragmentPath") {
        return Err(format!(
            "fragment: ours {frag:?}, systemd {:?}",
            outcome.prop("FragmentPath")
        ));
    }
    let dropins: Vec<String> = svc
        .dropins
        .iter()
        .map(|d| d.display().to_string())
        .collect();
    if !unshowable && dropins != outcome.dropins() {
        return Err(format!(
            "drop-ins: ours {dropins:?}, systemd {:?}",
            outcome.dropins()
        ));
    }
    // Commands that ran: a `-` command whose executable is missing is skipped.
    let ran: Vec<&unit::ExecCommand> = svc
        .exec_start
        .iter()
        .filter(|c| !(c.ignore_failure && c.path.starts_with(b"/nonexistent")))
        .collect();
    if outcome.records.is_empty() {
        // systemd loaded it but nothing ran: the start failed (an
        // environment file it refuses, no executable).
        if unit::offline_environment(&svc, Path::new("/"), &[]).is_err() {
            return Ok(());
        }
        let first = ran.first().ok_or("nothing ran and we have no command")?;
        let path = std::ffi::OsStr::new(std::str::from_utf8(&first.path).unwrap_or(""));
        return match unit::resolve_executable(path, svc.exec_search_path.as_deref(), Path::new("/"))
        {
            Err(_) => Ok(()),
            Ok(p) => Err(format!(
                "systemd ran nothing, we would exec {}",
                p.display()
            )),
        };
    }
    if ran.len() != outcome.records.len() {
        return Err(format!(
            "{} commands ran, we have {}",
            outcome.records.len(),
            ran.len()
        ));
    }
    for (cmd, rec) in ran.iter().zip(&outcome.records) {
        let env: Vec<(OsString, OsString)> = rec.env.clone();
        let ours = unit::expand_argv(cmd, &env)?;
        if ours != rec.argv {
            let show = |v: &[Vec<u8>]| {
                v.iter()
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect::<Vec<_>>()
            };
            return Err(format!(
                "argv: ours {:?}, systemd {:?}",
                show(&ours),
                show(&rec.argv)
            ));
        }
        let exe = unit::resolve_executable(
            std::ffi::OsStr::new(std::str::from_utf8(&cmd.path).unwrap()),
            svc.exec_search_path.as_deref(),
            Path::new("/"),
        )
        .map_err(|e| format!("resolving: {e:#}"))?;
        let real = std::fs::canonicalize(&exe).unwrap_or(exe);
        if real != Path::new(&rec.exe) {
            return Err(format!("exe: ours {}, systemd {}", real.display(), rec.exe));
        }
    }
    // Every variable we say the unit sets, the process saw with that value.
    let env = unit::offline_environment(&svc, Path::new("/"), &[]).map_err(|e| format!("{e:#}"))?;
    for (k, v) in env {
        let seen = outcome.records[0]
            .env
            .iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v.clone());
        if seen.as_ref() != Some(&v) {
            return Err(format!("env {k:?}: ours {v:?}, systemd {seen:?}"));
        }
    }
    Ok(())
}

#[test]
fn unit_resolution_matches_real_systemd() {
    if systemd_oracle::unavailable().is_some() {
        return;
    }
    let dir = scratch_dir();
    let scratch = dir.path();
    eprintln!("scratch: {}", scratch.display());
    std::fs::create_dir_all(scratch.join("bin")).unwrap();
    let recorder = systemd_oracle::build_recorder(&scratch.join("bin"));
    let mut cases: Vec<Case> = SINGLE
        .iter()
        .enumerate()
        .map(|(i, b)| simple(i, b))
        .collect();
    cases.extend(multi_cases(SINGLE.len()));
    let spec = user_manager_specifiers(scratch);
    // A type-level `service.d/` drop-in applies to every unit of a manager,
    // so each case that has one gets a manager of its own.
    let mut batches: Vec<Vec<&Case>> = vec![Vec::new()];
    for case in &cases {
        if case.files.iter().any(|(p, _)| p.contains("/service.d/")) {
            batches.push(vec![case]);
        } else {
            batches[0].push(case);
        }
    }
    let mut failures = Vec::new();
    for (n, batch) in batches.iter().enumerate() {
        let bdir = scratch.join(format!("batch{n}"));
        let unit_dirs: Vec<PathBuf> = ["u1", "u2", "u3"].iter().map(|d| bdir.join(d)).collect();
        for d in &unit_dirs {
            std::fs::create_dir_all(d).unwrap();
        }
        for case in batch {
            scratch_files(&bdir, case, &recorder);
        }
        let mut run = UserRun::new(unit_dirs, batch.iter().map(|c| c.unit.clone()).collect());
        run.wait_exits = true;
        let outcomes = systemd_oracle::run_user_manager(&run, &bdir);
        let paths = UnitPaths::from_list(Path::new("/"), &systemd_oracle::search_path(&run, &bdir));
        let spec = match &spec {
            Host::Fixed(m) => {
                let mut m = m.clone();
                m.insert('t', bdir.join("xdg-runtime").display().to_string());
                Host::Fixed(m)
            }
            other => other.clone(),
        };
        for case in batch {
            if let Err(why) = compare(case, outcomes.get(&case.unit), &paths, &spec) {
                let files: Vec<String> = case
                    .files
                    .iter()
                    .map(|(p, t)| format!("{p}: {t:?}"))
                    .collect();
                failures.push(format!(
                    "{}: {why}\n    {}",
                    case.unit,
                    files.join("\n    ")
                ));
            }
        }
    }
    println!("{} cases compared with systemd 252", cases.len());
    assert!(
        cases.len() >= 150,
        "want at least 150 cases, have {}",
        cases.len()
    );
    if !failures.is_empty() && std::env::var_os("ORACLE_KEEP").is_some() {
        let _ = dir.keep();
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn readme_states_the_case_count() {
    let n = SINGLE.len() + multi_cases(SINGLE.len()).len();
    readme_figures::assert_docs_say(&format!("{n} unit-file cases"));
}
