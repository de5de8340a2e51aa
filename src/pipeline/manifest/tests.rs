//! Tests of the manifest reader: kubectl-exact scalars, positions, hostile input.

use super::*;
use serde_json::json;

#[test]
fn paths() {
    assert_eq!(join_key("", "spec"), "spec");
    assert_eq!(join_key("spec", "tfReplicaSpecs"), "spec.tfReplicaSpecs");
    assert_eq!(
        join_key("metadata.annotations", "sidecar.istio.io/inject"),
        "metadata.annotations[sidecar.istio.io/inject]"
    );
    assert_eq!(join_index("a.containers", 0), "a.containers[0]");
    assert_eq!(parent_path("a.b[0].c"), Some("a.b[0]"));
    assert_eq!(parent_path("a.b[0]"), Some("a.b"));
    assert_eq!(parent_path("m.annotations[x.io/y]"), Some("m.annotations"));
    assert_eq!(parent_path("a"), Some(""));
    assert_eq!(parent_path(""), None);
}

/// The YAML table kubectl reads by: each row is a plain scalar and the JSON kubectl sends
/// for it (`None`: kubectl refuses the document). Rows follow go-yaml v2.4's `resolve.go`
/// (sigs.k8s.io/yaml/goyaml.v2) and the YAML 1.1 type drafts it implements
/// (yaml.org/type/bool.html, int.html, float.html, null.html), then Go's `encoding/json`.
#[test]
fn scalar_table_matches_kubectl() {
    let rows: &[(&str, Option<Value>)] = &[
        // bool.html: y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF
        ("y", Some(json!(true))),
        ("Y", Some(json!(true))),
        ("yes", Some(json!(true))),
        ("Yes", Some(json!(true))),
        ("YES", Some(json!(true))),
        ("true", Some(json!(true))),
        ("True", Some(json!(true))),
        ("TRUE", Some(json!(true))),
        ("on", Some(json!(true))),
        ("On", Some(json!(true))),
        ("ON", Some(json!(true))),
        ("n", Some(json!(false))),
        ("N", Some(json!(false))),
        ("no", Some(json!(false))),
        ("No", Some(json!(false))),
        ("NO", Some(json!(false))),
        ("false", Some(json!(false))),
        ("False", Some(json!(false))),
        ("FALSE", Some(json!(false))),
        ("off", Some(json!(false))),
        ("Off", Some(json!(false))),
        ("OFF", Some(json!(false))),
        // Mixed case is not in the table: a string.
        ("yEs", Some(json!("yEs"))),
        ("oN", Some(json!("oN"))),
        ("tRUE", Some(json!("tRUE"))),
        // null.html
        ("~", Some(json!(null))),
        ("null", Some(json!(null))),
        ("Null", Some(json!(null))),
        ("NULL", Some(json!(null))),
        ("nULL", Some(json!("nULL"))),
        // int.html: decimal, signs, `_` separators, 0-prefixed octal, 0x, 0b; plus 0o, which
        // Go's ParseInt(s, 0, 64) reads.
        ("0", Some(json!(0))),
        ("3", Some(json!(3))),
        ("+3", Some(json!(3))),
        ("-3", Some(json!(-3))),
        ("1_000", Some(json!(1000))),
        ("010", Some(json!(8))),
        ("0400", Some(json!(256))),
        ("-010", Some(json!(-8))),
        ("0o17", Some(json!(15))),
        ("0O17", Some(json!(15))),
        ("0x1F", Some(json!(31))),
        ("0X1f", Some(json!(31))),
        ("-0x10", Some(json!(-16))),
        ("0b11", Some(json!(3))),
        ("-0b11", Some(json!(-3))),
        ("0b1_0", Some(json!(2))),
        ("9223372036854775807", Some(json!(i64::MAX))),
        ("18446744073709551615", Some(json!(u64::MAX))),
        // Not an octal number, but it matches the float pattern: 8.0, sent as 8.
        ("08", Some(json!(8))),
        ("09.5", Some(json!(9.5))),
        // Beyond u64: the float pattern catches it.
        ("18446744073709551616", Some(json!(18446744073709551616.0))),
        // float.html as go-yaml implements it; integral results go out as integers.
        ("2.0", Some(json!(2))),
        ("1e1", Some(json!(10))),
        ("1E+2", Some(json!(100))),
        ("1.", Some(json!(1))),
        ("-2.0", Some(json!(-2))),
        ("1.5", Some(json!(1.5))),
        (".5", Some(json!(0.5))),
        ("+.5", Some(json!(0.5))),
        ("1_0.5", Some(json!(10.5))),
        ("1e21", Some(json!(1e21))),
        // Non-finite: resolved by the table, refused by encoding/json.
        (".inf", None),
        (".Inf", None),
        (".INF", None),
        ("+.inf", None),
        ("-.inf", None),
        ("-.INF", None),
        (".nan", None),
        (".NaN", None),
        (".NAN", None),
        // Overflowing floats are a ParseFloat range error: the text stays a string.
        ("1e400", Some(json!("1e400"))),
        // Shapes YAML 1.1 does not know stay strings.
        ("inf", Some(json!("inf"))),
        ("nan", Some(json!("nan"))),
        (".5_0", Some(json!(".5_0"))),
        ("0x", Some(json!("0x"))),
        ("0xG", Some(json!("0xG"))),
        ("1:30", Some(json!("1:30"))),
        ("8Gi", Some(json!("8Gi"))),
        ("500m", Some(json!("500m"))),
        ("_1", Some(json!("_1"))),
        ("2001-12-14", Some(json!("2001-12-14"))),
        ("1.2.3", Some(json!("1.2.3"))),
        ("+", Some(json!("+"))),
        ("-", Some(json!("-"))),
        ("+0x10", Some(json!(16))),
    ];
    let mut wrong = Vec::new();
    for (text, want) in rows {
        let got = resolve_plain(text).ok();
        if &got != want {
            wrong.push(format!("{text:?}: got {got:?}, want {want:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn documents_read_like_kubectl() {
    let src = "a: 010\nb: !!str 010\nc: '010'\nd: !!int \"0x10\"\ne: yes\nf: \"yes\"\n";
    let d = parse_one(src, "t.yaml").unwrap().unwrap();
    assert_eq!(
        d.value,
        json!({"a": 8, "b": "010", "c": "010", "d": 16, "e": true, "f": "yes"})
    );
    let e = parse_documents("a:\n  b: .inf\n", "t.yaml").unwrap_err();
    assert_eq!((e.location.line, e.location.column), (2, 6), "{e}");
    assert!(e.message.contains("+Inf"), "{e}");
    let e = parse_documents("a: !!int abc\n", "t.yaml").unwrap_err();
    assert!(e.message.contains("!!int"), "{e}");
    // Keys resolve too, then become JSON strings: `010: x` is key "8".
    let d = parse_one("010: x\non: y\n", "t").unwrap().unwrap();
    // `y` is a boolean too (bool.html).
    assert_eq!(d.value, json!({"8": "x", "true": true}));
}

#[test]
fn duplicate_keys_keep_the_later_value_with_a_warning() {
    let d = parse_one("a: 1\nb:\n  c: 1\n  c: 2\na: 3\n", "dup.yaml")
        .unwrap()
        .unwrap();
    assert_eq!(d.value, json!({"a": 3, "b": {"c": 2}}));
    let w: Vec<(String, usize)> = d
        .warnings
        .iter()
        .map(|w| (w.path.clone(), w.location.line))
        .collect();
    assert_eq!(w, vec![("b.c".to_string(), 4), ("a".to_string(), 5)]);
    assert!(
        d.warnings[1].message.contains("first at line 1"),
        "{:?}",
        d.warnings
    );
    // The position table points at the value that is kept.
    assert_eq!(d.positions.key("a").unwrap().line, 5);
}

#[test]
fn merge_keys_merge_like_go_yaml_v2() {
    let src = "base: &b {x: 1, w: 2}\nm:\n  <<: *b\n  w: 3\nl:\n  <<: [{x: 1}, {x: 2, z: 2}]\n";
    let d = parse_one(src, "m.yaml").unwrap().unwrap();
    assert_eq!(d.value["m"], json!({"x": 1, "w": 3}));
    assert_eq!(d.value["l"], json!({"x": 1, "z": 2}));
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    // A quoted "<<" is an ordinary key.
    let d = parse_one("'<<': 1\n", "m").unwrap().unwrap();
    assert_eq!(d.value, json!({"<<": 1}));
}

#[test]
fn typed_reading_names_file_line_and_field() {
    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code)]
    struct T {
        spec: S,
    }
    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code)]
    struct S {
        replicas: Vec<i32>,
    }
    let d = parse_one("spec:\n  replicas:\n  - 1\n  - 2.5\n", "r.yaml")
        .unwrap()
        .unwrap();
    let e = from_value::<T>(&d.value, Some(&d.positions), "r.yaml").unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.starts_with("r.yaml:4:5: spec.replicas[1]: cannot be read"),
        "{msg}"
    );
}

#[test]
fn positions_are_recorded() {
    let src = "apiVersion: v1\nmetadata:\n  annotations:\n    a.b/c: false\n    q: \"false\"\nlist:\n- x: 1\n";
    let docs = parse_documents(src, "f.yaml").unwrap();
    assert_eq!(docs.len(), 1);
    let d = &docs[0];
    assert_eq!(d.value["metadata"]["annotations"]["a.b/c"], json!(false));
    assert_eq!(d.value["metadata"]["annotations"]["q"], json!("false"));
    let l = d.positions.locate("metadata.annotations[a.b/c]").unwrap();
    assert_eq!((l.line, l.column), (4, 5));
    let v = d.positions.value("metadata.annotations[a.b/c]").unwrap();
    assert_eq!((v.line, v.column), (4, 12));
    let l = d.positions.locate("list[0].x").unwrap();
    assert_eq!(l.line, 7);
    // Missing paths fall back to the nearest ancestor.
    assert_eq!(d.positions.locate("list[0].y.z").unwrap().line, 7);
}

#[test]
fn multi_document_and_empty_documents() {
    let docs = parse_documents("---\na: 1\n---\n# only a comment\n---\nb: 2\n", "f").unwrap();
    assert_eq!(docs.len(), 2);
    assert_eq!(docs[1].value, json!({"b": 2}));
    assert_eq!(docs[1].index, 1);
}

#[test]
fn syntax_errors_have_positions() {
    let e = parse_documents("a: [1, 2\nb: 3\n", "bad.yaml").unwrap_err();
    assert_eq!(e.location.file, "bad.yaml");
    assert!(e.to_string().starts_with("bad.yaml:"));
}

#[test]
fn hostile_inputs_fail_cleanly() {
    let deep = "[".repeat(100_000) + &"]".repeat(100_000);
    let e = parse_documents(&deep, "deep").unwrap_err();
    assert!(e.message.contains("recursion limit"), "{e}");
    let block: String = (0..200)
        .map(|i| format!("{}k:\n", "  ".repeat(i)))
        .collect();
    let e = parse_documents(&block, "deep").unwrap_err();
    assert!(e.message.contains("nesting"), "{e}");
    let bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\ng: [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n";
    let e = parse_documents(bomb, "bomb").unwrap_err();
    assert!(e.message.contains("nodes"), "{e}");
}

#[test]
fn one_long_string_aliased_many_times_is_refused_by_its_bytes() {
    // Under the node cap (2,001 nodes) but ~2 GB expanded: the budget counts bytes.
    let long = "x".repeat(1024 * 1024);
    let aliases = "*s, ".repeat(2_000);
    let bomb = format!("a: &s {long}\nb: [{aliases}]\n");
    let e = parse_documents(&bomb, "bomb.yaml").unwrap_err();
    assert!(e.message.contains("MiB"), "{e}");
    assert_eq!(e.location.line, 2, "{e}");
    // A string aliased a few times, as real manifests do, still reads.
    let ok = format!("a: &s {}\nb: [*s, *s, *s]\n", "y".repeat(100_000));
    let docs = parse_documents(&ok, "ok.yaml").unwrap();
    assert_eq!(docs[0].value["b"][2].as_str().map(str::len), Some(100_000));
}

#[test]
fn keys_become_strings_as_kubectl_makes_them_and_a_null_key_is_refused() {
    let doc = parse_one("1.5: a\n1e3: b\n0.00001: d\ntrue: e\n010: f\n", "k.yaml")
        .unwrap()
        .unwrap();
    let keys: Vec<&str> = doc
        .value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    for k in ["1.5", "1000", "1e-05", "true", "8"] {
        assert!(keys.contains(&k), "{k} not in {keys:?}");
    }
    for src in ["~: x\n", "null: x\n", ": x\n"] {
        let e = parse_one(src, "n.yaml").unwrap_err().to_string();
        assert!(e.contains("a mapping key is null"), "{src:?}: {e}");
    }
    // Quoted, it is the word.
    let doc = parse_one("\"null\": x\n", "q.yaml").unwrap().unwrap();
    assert_eq!(doc.value["null"], "x");
}

#[test]
fn whole_float_keys_of_a_million_and_more_keep_gos_exponent_form() {
    // sigs.k8s.io/yaml `yamlMapKeyToString`: FormatFloat(f, 'g', -1, 32) of go-yaml's float64,
    // so a whole float key is not turned into an integer as a float value is.
    let src = "1e7: a\n10000000.0: b\n1e6: c\n999999.0: d\n1.5e7: e\n.inf: f\n-.inf: g\n!!float 3: h\n10000000: i\nv: 1e7\n";
    let doc = parse_one(src, "k.yaml").unwrap().unwrap();
    let v = &doc.value;
    assert_eq!(v["1e+07"], "b", "the later of 1e7 and 10000000.0 wins: {v}");
    assert_eq!(v["1e+06"], "c");
    assert_eq!(v["999999"], "d");
    assert_eq!(v["1.5e+07"], "e");
    assert_eq!(v[".inf"], "f");
    assert_eq!(v["-.inf"], "g");
    assert_eq!(v["3"], "h");
    assert_eq!(v["10000000"], "i", "an int key stays decimal");
    assert_eq!(v["v"], 10000000, "a float value goes through encoding/json");
}
