//! Workload names as Kueue's jobframework builds them (`pkg/controller/jobframework/
//! workload_names.go`, `GetWorkloadNameForOwnerWithGVK`): `<kind lowercased>-<owner name>`
//! cut to 247 characters, then `-` and the first 5 hex digits of SHA-1 over
//! `"<Kind>\n<group>\n<owner name>\n<owner uid>"` (the `ShortWorkloadNames` gate, alpha and
//! off, is not modelled).

/// SHA-1 (FIPS 180-4); only for the name hash, as Kueue uses it.
pub(crate) fn sha1(data: &[u8]) -> [u8; 20] {
    let mut h: [u32; 5] = [0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0];
    let mut msg = data.to_vec();
    let bits = (data.len() as u64).wrapping_mul(8);
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&bits.to_be_bytes());
    for chunk in msg.chunks(64) {
        let mut w = [0u32; 80];
        for (i, word) in chunk.chunks(4).enumerate() {
            w[i] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        }
        for i in 16..80 {
            w[i] = (w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]).rotate_left(1);
        }
        let [mut a, mut b, mut c, mut d, mut e] = h;
        for (i, wi) in w.iter().enumerate() {
            let (f, k) = match i {
                0..=19 => ((b & c) | (!b & d), 0x5A827999),
                20..=39 => (b ^ c ^ d, 0x6ED9EBA1),
                40..=59 => ((b & c) | (b & d) | (c & d), 0x8F1BBCDC),
                _ => (b ^ c ^ d, 0xCA62C1D6),
            };
            let t = a
                .rotate_left(5)
                .wrapping_add(f)
                .wrapping_add(e)
                .wrapping_add(k)
                .wrapping_add(*wi);
            e = d;
            d = c;
            c = b.rotate_left(30);
            b = a;
            a = t;
        }
        for (x, y) in h.iter_mut().zip([a, b, c, d, e]) {
            *x = x.wrapping_add(y);
        }
    }
    let mut out = [0u8; 20];
    for (i, x) in h.iter().enumerate() {
        out[i * 4..i * 4 + 4].copy_from_slice(&x.to_be_bytes());
    }
    out
}

const MAX_PREFIX: usize = 253 - 6;

/// The Workload name for an owner of `kind` in `group` (`GetWorkloadNameForOwnerWithGVK`).
pub fn workload_name(kind: &str, group: &str, owner: &str, uid: &str) -> String {
    let mut prefix = format!("{}-{owner}", kind.to_lowercase());
    if prefix.len() > MAX_PREFIX {
        prefix.truncate(MAX_PREFIX);
    }
    let digest = sha1(format!("{kind}\n{group}\n{owner}\n{uid}").as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("{prefix}-{}", &hex[..5])
}

/// A TFJob's Workload name.
pub fn tfjob_workload_name(job: &str, uid: &str) -> String {
    workload_name("TFJob", "kubeflow.org", job, uid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha1_known_vectors() {
        let hex = |d: [u8; 20]| d.iter().map(|b| format!("{b:02x}")).collect::<String>();
        assert_eq!(
            hex(sha1(b"abc")),
            "a9993e364706816aba3e25717850c26c9cd0d89d"
        );
        assert_eq!(hex(sha1(b"")), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
        // Two blocks of padding.
        assert_eq!(
            hex(sha1(
                b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
            )),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1"
        );
    }

    #[test]
    fn names_match_kueue_examples() {
        // workload_names_test.go: a batch Job "name" with uid "uid".
        assert_eq!(
            workload_name("Job", "batch", "name", "uid"),
            "job-name-ef3a1"
        );
        // The reference notes' TFJob example (queueing.md §1.4).
        assert_eq!(
            tfjob_workload_name("j1", "a7a8713e-6de0-43ab-972c-5827b72235f2"),
            "tfjob-j1-51bee"
        );
    }

    #[test]
    fn long_owner_names_are_cut_to_fit_253() {
        let n = tfjob_workload_name(&"a".repeat(300), "u");
        assert_eq!(n.len(), 253);
        assert!(n.starts_with("tfjob-aaa"));
    }
}
