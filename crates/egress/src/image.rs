//! The proxy image, built locally from an agentc executable the caller names
//! ([`ProxyExecutable`]; the agentc binary names itself): no registry is needed.
//!
//! The root filesystem holds the executable at [`crate::PROXY_BINARY`], the shared libraries
//! it has mapped (the dynamic loader, libc, libgcc_s, libm...) at the same paths as on the host,
//! the loader again at the path the executable names (`PT_INTERP`, as a symlink), `/etc/passwd`
//! and `/etc/group` with `nobody` (65534), `/etc/nsswitch.conf` (`hosts: files dns`: glibc 2.34
//! and later resolve with both built into libc, no NSS module needed), and empty `/tmp`,
//! `/proc`, `/sys`, `/dev`. The tar is deterministic (sorted, mtime 0, owner 0), so its hash
//! names the image: `agentc-egress:<first 12 hex digits of its sha256>`, imported once and
//! reused while the binary is unchanged.
//!
//! [`rootfs_tar`], [`mapped_libraries`] and [`elf_interpreter`] are pure; [`self_inputs`] reads
//! `/proc/self`, [`proxy_image`] the executable it is given and `/proc/self/maps`. The import
//! is an operation of the engine port (`agentc_engine::companion::import_unless_present`:
//! `docker import` or `POST /images/create?fromSrc=-`, written once for both backends). Verified on Debian 12 (glibc
//! 2.36): in this image the proxy resolves names through docker's embedded DNS with nothing but
//! libc.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::config::PROXY_BINARY;
use crate::error::EgressError;

/// The repository of the proxy image's tags.
pub const IMAGE_REPOSITORY: &str = "agentc-egress";

/// The label every image built here carries (value: what the image is for).
pub const IMAGE_LABEL: &str = "io.agentc.image";

/// What goes into the root filesystem, as bytes and paths (no I/O).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RootfsInputs {
    /// The executable's bytes, written at `executable_path`.
    pub executable: Vec<u8>,
    /// Where the executable goes in the image (absolute).
    pub executable_path: String,
    /// Shared libraries: absolute path in the image, and bytes.
    pub libraries: BTreeMap<String, Vec<u8>>,
    /// Symlinks: absolute path, and target.
    pub symlinks: BTreeMap<String, String>,
}

/// The pathnames of the shared libraries a process has mapped, read from its
/// `/proc/PID/maps`: file mappings whose name holds `.so`, the executable itself left out.
pub fn mapped_libraries(maps: &str, executable: &str) -> Vec<String> {
    let mut paths: Vec<String> = maps
        .lines()
        .filter_map(|line| {
            // address perms offset dev inode pathname (the pathname may hold spaces)
            let mut fields = line.splitn(6, ' ');
            let _ = fields.nth(4)?;
            let path = fields.next()?.trim_start();
            Some(path.to_string())
        })
        .filter(|path| path.starts_with('/') && path != executable)
        .filter(|path| !path.ends_with(" (deleted)"))
        .filter(|path| {
            Path::new(path)
                .file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.contains(".so"))
        })
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

/// The program interpreter an ELF executable names (`PT_INTERP`), such as
/// `/lib64/ld-linux-x86-64.so.2`; `None` for a static executable. 64-bit little-endian only.
pub fn elf_interpreter(elf: &[u8]) -> Result<Option<String>, &'static str> {
    if elf.get(..4) != Some(b"\x7fELF") {
        return Err("not an ELF file");
    }
    if elf.get(4) != Some(&2) || elf.get(5) != Some(&1) {
        return Err("not a 64-bit little-endian ELF file");
    }
    let u16_at = |at: usize| -> Option<u64> {
        Some(u16::from_le_bytes(elf.get(at..at + 2)?.try_into().ok()?) as u64)
    };
    let u32_at = |at: usize| -> Option<u64> {
        Some(u32::from_le_bytes(elf.get(at..at + 4)?.try_into().ok()?) as u64)
    };
    let u64_at = |at: usize| -> Option<u64> {
        Some(u64::from_le_bytes(elf.get(at..at + 8)?.try_into().ok()?))
    };
    let header = (|| Some((u64_at(0x20)?, u16_at(0x36)?, u16_at(0x38)?)))();
    let (phoff, phentsize, phnum) = header.ok_or("a truncated ELF header")?;
    for index in 0..phnum {
        let at = phoff
            .checked_add(index * phentsize)
            .ok_or("a program header offset out of range")? as usize;
        let kind = u32_at(at).ok_or("a truncated program header")?;
        if kind == 3 {
            let offset = u64_at(at + 8).ok_or("a truncated program header")? as usize;
            let size = u64_at(at + 32).ok_or("a truncated program header")? as usize;
            let bytes = elf
                .get(offset..offset.saturating_add(size))
                .ok_or("PT_INTERP runs past the file")?;
            let path = bytes.split(|b| *b == 0).next().unwrap_or_default();
            return String::from_utf8(path.to_vec())
                .map(Some)
                .map_err(|_| "PT_INTERP is not UTF-8");
        }
    }
    Ok(None)
}

/// One entry of a ustar archive.
fn tar_header(path: &str, mode: u32, size: u64, kind: u8, link: &str) -> [u8; 512] {
    owned_tar_header(path, mode, size, kind, link, 0)
}

/// [`tar_header`] of an entry owned by `owner` (uid and gid).
fn owned_tar_header(
    path: &str,
    mode: u32,
    size: u64,
    kind: u8,
    link: &str,
    owner: u32,
) -> [u8; 512] {
    let mut header = [0u8; 512];
    let name = path.trim_start_matches('/');
    let (prefix, name) = if name.len() > 100 {
        // Split at a '/' so the name part fits in 100 bytes and the prefix in 155.
        let cut = name[..name.len() - 1]
            .char_indices()
            .filter(|(i, c)| *c == '/' && name.len() - i - 1 <= 100 && *i <= 155)
            .map(|(i, _)| i)
            .next()
            .unwrap_or(0);
        (&name[..cut], &name[cut + 1..])
    } else {
        ("", name)
    };
    let field = |header: &mut [u8; 512], at: usize, len: usize, value: &[u8]| {
        let n = value.len().min(len);
        header[at..at + n].copy_from_slice(&value[..n]);
    };
    let octal = |value: u64, width: usize| format!("{value:0>w$o}\0", w = width - 1);
    field(&mut header, 0, 100, name.as_bytes());
    field(&mut header, 100, 8, octal(u64::from(mode), 8).as_bytes());
    field(&mut header, 108, 8, octal(u64::from(owner), 8).as_bytes());
    field(&mut header, 116, 8, octal(u64::from(owner), 8).as_bytes());
    field(&mut header, 124, 12, octal(size, 12).as_bytes());
    field(&mut header, 136, 12, octal(0, 12).as_bytes());
    header[156] = kind;
    field(&mut header, 157, 100, link.as_bytes());
    field(&mut header, 257, 8, b"ustar\x0000");
    field(&mut header, 345, 155, prefix.as_bytes());
    header[148..156].copy_from_slice(b"        ");
    let sum: u32 = header.iter().map(|b| u32::from(*b)).sum();
    field(&mut header, 148, 8, format!("{sum:06o}\0 ").as_bytes());
    header
}

fn parents(path: &str) -> impl Iterator<Item = String> + '_ {
    let trimmed = path.trim_start_matches('/');
    trimmed
        .match_indices('/')
        .map(move |(i, _)| format!("/{}", &trimmed[..i]))
}

const PASSWD: &str =
    "root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n";
const GROUP: &str = "root:x:0:\nnogroup:x:65534:\n";
const NSSWITCH: &str = "hosts: files dns\n";
/// A directory owned by the image's user (65534): where the proxy writes its launch
/// CA's certificate and the workload's trust bundle (`credential::CredentialConfig::ca_dir`,
/// the policy's `CA_DIR_TARGET`).
pub const OWNED_DIRECTORY: &str = crate::credential::CA_DIR;

/// The other directory owned by the image's user, private to it (0700): where the proxy keeps
/// its audit files ([`crate::audit::AUDIT_DIR`]), a volume of its own that starts as a copy.
pub const AUDIT_DIRECTORY: &str = crate::audit::AUDIT_DIR;

/// Builds the root filesystem as a deterministic tar (pure: same inputs, same bytes).
pub fn rootfs_tar(inputs: &RootfsInputs) -> Vec<u8> {
    // path -> (mode, kind, contents or link target)
    let mut entries: BTreeMap<String, (u32, u8, Vec<u8>)> = BTreeMap::new();
    let mut file = |path: &str, mode: u32, contents: Vec<u8>| {
        entries.insert(path.to_string(), (mode, b'0', contents));
    };
    file(&inputs.executable_path, 0o755, inputs.executable.clone());
    for (path, bytes) in &inputs.libraries {
        file(path, 0o755, bytes.clone());
    }
    file("/etc/passwd", 0o644, PASSWD.into());
    file("/etc/group", 0o644, GROUP.into());
    file("/etc/nsswitch.conf", 0o644, NSSWITCH.into());
    for (path, target) in &inputs.symlinks {
        entries.insert(path.clone(), (0o777, b'2', target.clone().into_bytes()));
    }
    let mut directories: BTreeMap<String, u32> = BTreeMap::new();
    for path in entries.keys() {
        for parent in parents(path) {
            directories.entry(parent).or_insert(0o755);
        }
    }
    for (path, mode) in [
        ("/tmp", 0o1777),
        ("/proc", 0o555),
        ("/sys", 0o555),
        ("/dev", 0o755),
    ] {
        directories.insert(path.to_string(), mode);
    }
    for parent in parents(OWNED_DIRECTORY).chain(parents(AUDIT_DIRECTORY)) {
        directories.entry(parent).or_insert(0o755);
    }
    let mut tar = Vec::new();
    for (path, mode) in &directories {
        tar.extend_from_slice(&tar_header(&format!("{path}/"), *mode, 0, b'5', ""));
    }
    // The proxy's own directory (the launch CA it writes for the workload): a volume mounted
    // there starts as a copy of it, owned by the proxy's user.
    tar.extend_from_slice(&owned_tar_header(
        &format!("{OWNED_DIRECTORY}/"),
        0o755,
        0,
        b'5',
        "",
        65534,
    ));
    tar.extend_from_slice(&owned_tar_header(
        &format!("{AUDIT_DIRECTORY}/"),
        0o700,
        0,
        b'5',
        "",
        65534,
    ));
    for (path, (mode, kind, contents)) in &entries {
        if *kind == b'2' {
            let target = String::from_utf8_lossy(contents);
            tar.extend_from_slice(&tar_header(path, *mode, 0, b'2', &target));
        } else {
            tar.extend_from_slice(&tar_header(path, *mode, contents.len() as u64, b'0', ""));
            tar.extend_from_slice(contents);
            let pad = (512 - contents.len() % 512) % 512;
            tar.extend(std::iter::repeat_n(0u8, pad));
        }
    }
    tar.extend_from_slice(&[0u8; 1024]);
    tar
}

/// The image's changes (`docker import --change`): user, default command, labels, and a
/// health check in exec form when given (the docker CLI's `--health-cmd` is always
/// `CMD-SHELL`, and the image has no shell, so the check travels with the image).
pub fn import_changes(purpose: &str, command: &[&str], health: Option<&[&str]>) -> Vec<String> {
    let json = |argv: &[&str]| serde_json::to_string(argv).unwrap_or_default();
    let mut changes = vec![
        "USER 65534:65534".to_string(),
        "WORKDIR /".to_string(),
        format!("CMD {}", json(command)),
        format!("LABEL {IMAGE_LABEL}={purpose}"),
        format!("LABEL io.agentc.version={}", env!("CARGO_PKG_VERSION")),
    ];
    if let Some(health) = health {
        changes.push(format!(
            "HEALTHCHECK --interval=2s --timeout=3s --start-period=1s --retries=3 CMD {}",
            json(health)
        ));
    }
    changes
}

/// The tag of an image: `REPOSITORY:<first 12 hex digits of sha256(tar, changes)>`.
pub fn image_tag(repository: &str, tar: &[u8], changes: &[String]) -> String {
    let mut hash = Sha256::new();
    hash.update(tar);
    for change in changes {
        hash.update(change.as_bytes());
        hash.update([0]);
    }
    let digest = hash.finalize();
    let hex: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
    format!("{repository}:{hex}")
}

fn read(path: &Path) -> Result<Vec<u8>, EgressError> {
    std::fs::read(path).map_err(|source| EgressError::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// The agentc executable the proxy image is made of: a plain value the caller passes in
/// ([`proxy_image`], [`cached_proxy_tag`], [`remember_proxy_tag`]). The agentc binary passes
/// the [default](ProxyExecutable::running), itself (`/proc/self/exe`). A program or test that
/// embeds agentc as a library and launches an allowlist enforced outside names the agentc
/// binary ([`ProxyExecutable::new`]): the running executable would not answer `egress-proxy
/// serve`, and the launch would fail closed when the proxy never gets healthy. The libraries in
/// the image are still those the running process has mapped (a Rust program linking agentc
/// maps at least what the agentc binary needs).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ProxyExecutable {
    path: PathBuf,
}

impl ProxyExecutable {
    /// The path of the running executable, as the kernel shows it.
    pub const RUNNING: &'static str = "/proc/self/exe";

    /// The agentc executable at `path`.
    pub fn new(path: impl Into<PathBuf>) -> ProxyExecutable {
        ProxyExecutable { path: path.into() }
    }

    /// The running executable ([`ProxyExecutable::RUNNING`]): what the agentc binary passes.
    pub fn running() -> ProxyExecutable {
        ProxyExecutable::new(Self::RUNNING)
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The variable naming the agentc binary for a program that embeds agentc.
    pub const VARIABLE: &'static str = "AGENTC_PROXY_EXECUTABLE";

    /// The agentc binary as a program embedding agentc finds it in its environment `env`:
    /// [`ProxyExecutable::VARIABLE`] when set, else the first `agentc` on `env`'s `PATH` that is
    /// an executable file; `None` without either. Whether it is the agentc binary of this
    /// version is checked when its image is made ([`proxy_image`]).
    pub fn locate(env: &std::collections::BTreeMap<String, String>) -> Option<ProxyExecutable> {
        use std::os::unix::fs::PermissionsExt;
        if let Some(named) = env.get(Self::VARIABLE).filter(|path| !path.is_empty()) {
            return Some(ProxyExecutable::new(named));
        }
        env.get("PATH")?
            .split(':')
            .filter(|dir| !dir.is_empty())
            .map(|dir| Path::new(dir).join("agentc"))
            .find(|path| {
                std::fs::metadata(path)
                    .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
            })
            .map(ProxyExecutable::new)
    }
}

impl Default for ProxyExecutable {
    /// The running executable ([`ProxyExecutable::running`]).
    fn default() -> ProxyExecutable {
        ProxyExecutable::running()
    }
}

/// Reads what the image needs from the running process: its executable (`/proc/self/exe`), the
/// libraries in `/proc/self/maps`, and the loader the executable's ELF header names. The
/// executable goes to `executable_path` in the image.
pub fn self_inputs(executable_path: &str) -> Result<RootfsInputs, EgressError> {
    inputs_of(&ProxyExecutable::running(), executable_path)
}

/// What the image of `source` needs: its bytes, the libraries the running process has mapped
/// (`/proc/self/maps`), and the loader `source`'s ELF header names; the executable goes to
/// `executable_path` in the image.
fn inputs_of(source: &ProxyExecutable, executable_path: &str) -> Result<RootfsInputs, EgressError> {
    let exe = source.path().to_path_buf();
    let executable = read(&exe)?;
    // The running executable's own mapping is not a library, whichever executable is imaged.
    let running = std::fs::read_link("/proc/self/exe").unwrap_or_default();
    let exe_path = std::fs::read_link(&exe).unwrap_or_else(|_| exe.clone());
    let maps = String::from_utf8_lossy(&read(Path::new("/proc/self/maps"))?).into_owned();
    let mut inputs = RootfsInputs {
        executable_path: executable_path.to_string(),
        ..RootfsInputs::default()
    };
    for library in mapped_libraries(&maps, &running.to_string_lossy()) {
        let bytes = read(Path::new(&library))?;
        inputs.libraries.insert(library, bytes);
    }
    let interpreter = elf_interpreter(&executable).map_err(|reason| EgressError::Executable {
        path: exe_path.clone(),
        reason: reason.to_string(),
    })?;
    if let Some(interpreter) = interpreter {
        if !inputs.libraries.contains_key(&interpreter) {
            let canonical = std::fs::canonicalize(&interpreter)
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default();
            if inputs.libraries.contains_key(&canonical) {
                inputs.symlinks.insert(interpreter, canonical);
            } else {
                let bytes = read(Path::new(&interpreter))?;
                inputs.libraries.insert(interpreter, bytes);
            }
        }
    }
    inputs.executable = executable;
    Ok(inputs)
}

/// The tar, changes and tag of an image of an executable.
#[derive(Debug, Clone)]
pub struct Image {
    /// `REPOSITORY:HASH`.
    pub tag: String,
    /// The root filesystem.
    pub tar: Vec<u8>,
    /// The `docker import --change` lines.
    pub changes: Vec<String>,
}

/// Prepares an image of the running executable (no daemon contact): the executable at
/// `executable_path`, tagged `REPOSITORY:HASH`, labelled with `purpose`.
pub fn self_image(
    repository: &str,
    purpose: &str,
    executable_path: &str,
    command: &[&str],
    health: Option<&[&str]>,
) -> Result<Image, EgressError> {
    let inputs = inputs_of(&ProxyExecutable::running(), executable_path)?;
    Ok(image_from(&inputs, repository, purpose, command, health))
}

/// The image of `inputs`: its root filesystem, `docker import` changes and tag.
fn image_from(
    inputs: &RootfsInputs,
    repository: &str,
    purpose: &str,
    command: &[&str],
    health: Option<&[&str]>,
) -> Image {
    let tar = rootfs_tar(inputs);
    let changes = import_changes(purpose, command, health);
    let tag = image_tag(repository, &tar, &changes);
    Image { tag, tar, changes }
}

/// The mark of the agentc binary, written backwards so that no program linking this crate
/// holds it: only the binary's own `main.rs` spells it forwards (with the version), as the
/// bytes [`proxy_mark`] returns.
const PROXY_MARK_BACKWARDS: &str = ":kram-yxorp-sserge-ctnega";

/// The bytes only the agentc binary of this version holds (`agentc-egress-proxy-mark:VERSION;`,
/// which its `main.rs` keeps in a `#[used]` static): what makes an executable one that answers
/// `egress-proxy serve` as this library writes it.
pub fn proxy_mark() -> Vec<u8> {
    let mut mark: String = PROXY_MARK_BACKWARDS.chars().rev().collect();
    mark.push_str(env!("CARGO_PKG_VERSION"));
    mark.push(';');
    mark.into_bytes()
}

/// Whether `executable` (its bytes) is the agentc binary of this version ([`proxy_mark`]).
pub fn is_agentc_binary(executable: &[u8]) -> bool {
    memchr::memmem::find(executable, &proxy_mark()).is_some()
}

/// Prepares the proxy image of the agentc executable `source` (no daemon contact); an
/// executable that is not the agentc binary of this version ([`is_agentc_binary`]: a program
/// embedding agentc, another version) is refused, never imaged as a proxy that cannot serve.
pub fn proxy_image(source: &ProxyExecutable) -> Result<Image, EgressError> {
    let inputs = inputs_of(source, PROXY_BINARY)?;
    if !is_agentc_binary(&inputs.executable) {
        let path = std::fs::read_link(source.path()).unwrap_or_else(|_| source.path().into());
        return Err(EgressError::Executable {
            path,
            reason: format!(
                "is not the agentc binary of version {} (an egress proxy is made of it); name \
                 the agentc binary ({}, agentc on PATH, or Sandboxes::with_proxy_executable)",
                env!("CARGO_PKG_VERSION"),
                ProxyExecutable::VARIABLE
            ),
        });
    }
    Ok(image_from(
        &inputs,
        IMAGE_REPOSITORY,
        "egress-proxy",
        &[PROXY_BINARY, "egress-proxy", "serve"],
        Some(&[PROXY_BINARY, "egress-proxy", "health"]),
    ))
}

/// A file's identity on this machine: its device, inode, size and modification time, in hex.
/// A cache keyed by it misses for a rebuilt or replaced file; `None` when there is no file.
pub fn file_identity(path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).ok()?;
    Some(format!(
        "{:x}-{:x}-{:x}-{:x}.{:x}",
        meta.dev(),
        meta.ino(),
        meta.size(),
        meta.mtime(),
        meta.mtime_nsec()
    ))
}

/// Where the tag of the proxy image of `source` is remembered between launches, so that a
/// launch does not read and hash the whole binary again: `$XDG_CACHE_HOME/agentc` (or
/// `~/.cache/agentc`), keyed by the executable's device, inode, size and modification time (a
/// rebuilt or replaced binary misses).
fn tag_cache_path(source: &ProxyExecutable) -> Option<PathBuf> {
    let key = file_identity(source.path())?;
    let dir = agentc_cache_dir(|name| std::env::var(name).ok())?;
    Some(dir.join(format!("egress-image-{key}")))
}

/// agentc's cache directory, as `env` (the caller's environment) names it:
/// `$XDG_CACHE_HOME/agentc`, else `$HOME/.cache/agentc`; `None` when neither is set (an empty
/// value counts as unset). The proxy image's tag, the isolation probes and the bundled build
/// contexts are kept there.
pub fn agentc_cache_dir(env: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let set = |name: &str| env(name).filter(|value| !value.is_empty());
    let base = match set("XDG_CACHE_HOME") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(set("HOME")?).join(".cache"),
    };
    Some(base.join("agentc"))
}

/// Whether `tag` is a proxy image tag (`agentc-egress:` and 12 lower-case hex digits).
fn is_proxy_tag(tag: &str) -> bool {
    tag.strip_prefix(IMAGE_REPOSITORY)
        .and_then(|rest| rest.strip_prefix(':'))
        .is_some_and(|hex| {
            hex.len() == 12
                && hex
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        })
}

/// The proxy image tag remembered for the agentc executable `source` ([`remember_proxy_tag`]),
/// if any; the caller still checks that the daemon has it.
pub fn cached_proxy_tag(source: &ProxyExecutable) -> Option<String> {
    let text = std::fs::read_to_string(tag_cache_path(source)?).ok()?;
    let tag = text.trim();
    is_proxy_tag(tag).then(|| tag.to_string())
}

/// Remembers the proxy image tag of the agentc executable `source` (best effort: a cache that
/// cannot be written only costs the next launch a hash).
pub fn remember_proxy_tag(source: &ProxyExecutable, tag: &str) {
    let Some(path) = tag_cache_path(source) else {
        return;
    };
    let Some(dir) = path.parent() else {
        return;
    };
    let temporary = dir.join(format!(".egress-image-{}", std::process::id()));
    let written = std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&temporary, format!("{tag}\n")))
        .and_then(|()| std::fs::rename(&temporary, &path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_agentc_binary_of_this_version_is_imaged_as_a_proxy() {
        let mark = proxy_mark();
        // (Not spelled forwards here: this test binary would hold the mark then.)
        assert!(mark.starts_with(b"agentc-egress-"));
        assert!(mark.ends_with(format!("-mark:{};", env!("CARGO_PKG_VERSION")).as_bytes()));
        let mut binary = b"\x7fELF...".to_vec();
        assert!(!is_agentc_binary(&binary));
        binary.extend_from_slice(&mark);
        assert!(is_agentc_binary(&binary));
        assert!(!is_agentc_binary(b"agentc-egress-proxy-mark:0.0.0-other;"));
        // This test binary links the crate and is not the agentc binary: refused, naming it.
        let error = match proxy_image(&ProxyExecutable::running()) {
            Ok(image) => panic!("a program embedding agentc imaged as {}", image.tag),
            Err(error) => error.to_string(),
        };
        assert!(
            error.contains("is not the agentc binary of version"),
            "{error}"
        );
        assert!(error.contains("AGENTC_PROXY_EXECUTABLE"), "{error}");
    }

    #[test]
    fn a_program_embedding_agentc_finds_the_binary_by_its_variable_or_path() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("agentc-locate-{}", std::process::id()));
        let (bin, empty) = (dir.join("bin"), dir.join("empty"));
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(&empty).unwrap();
        let agentc = bin.join("agentc");
        std::fs::write(&agentc, b"").unwrap();
        let env = |pairs: &[(&str, String)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect::<std::collections::BTreeMap<_, _>>()
        };
        let path = format!("{}:{}", empty.display(), bin.display());
        // Not executable: not taken.
        std::fs::set_permissions(&agentc, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(
            ProxyExecutable::locate(&env(&[("PATH", path.clone())])),
            None
        );
        std::fs::set_permissions(&agentc, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(
            ProxyExecutable::locate(&env(&[("PATH", path.clone())])),
            Some(ProxyExecutable::new(&agentc))
        );
        // The variable first; an empty one is unset.
        assert_eq!(
            ProxyExecutable::locate(&env(&[
                ("PATH", path.clone()),
                (ProxyExecutable::VARIABLE, "/opt/agentc".into())
            ])),
            Some(ProxyExecutable::new("/opt/agentc"))
        );
        assert_eq!(
            ProxyExecutable::locate(&env(&[
                ("PATH", empty.display().to_string()),
                (ProxyExecutable::VARIABLE, String::new())
            ])),
            None
        );
        assert_eq!(ProxyExecutable::locate(&env(&[])), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn only_proxy_tags_are_taken_from_the_cache() {
        assert!(is_proxy_tag("agentc-egress:0123456789ab"));
        for tag in [
            "agentc-egress:0123456789AB",
            "agentc-egress:0123456789a",
            "agentc-egress:latest",
            "busybox:0123456789ab",
            "agentc-egress0123456789ab",
        ] {
            assert!(!is_proxy_tag(tag), "{tag}");
        }
    }

    const MAPS: &str = "\
55d0c8a00000-55d0c8a50000 r--p 00000000 fd:01 1234 /usr/local/bin/agentc
7f1a2b000000-7f1a2b022000 r--p 00000000 fd:01 111 /usr/lib/x86_64-linux-gnu/libc.so.6
7f1a2b022000-7f1a2b197000 r-xp 00022000 fd:01 111 /usr/lib/x86_64-linux-gnu/libc.so.6
7f1a2c000000-7f1a2c003000 r--p 00000000 fd:01 112 /usr/lib/x86_64-linux-gnu/libgcc_s.so.1
7f1a2d000000-7f1a2d001000 r--p 00000000 fd:01 113 /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
7f1a2e000000-7f1a2e001000 rw-p 00000000 00:00 0 
7f1a2f000000-7f1a2f001000 r--p 00000000 fd:01 114 /usr/lib/locale/C.utf8/LC_CTYPE
7f1a30000000-7f1a30001000 r--p 00000000 00:05 115 /memfd:x (deleted)
7ffd1c000000-7ffd1c021000 rw-p 00000000 00:00 0                          [stack]
7ffd1c1f0000-7ffd1c1f2000 r-xp 00000000 00:00 0                          [vdso]
";

    #[test]
    fn the_mapped_libraries_are_the_shared_objects_only() {
        assert_eq!(
            mapped_libraries(MAPS, "/usr/local/bin/agentc"),
            [
                "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
                "/usr/lib/x86_64-linux-gnu/libc.so.6",
                "/usr/lib/x86_64-linux-gnu/libgcc_s.so.1",
            ]
        );
    }

    #[test]
    fn the_interpreter_of_this_test_binary_is_read() {
        let me = std::fs::read("/proc/self/exe").unwrap();
        let interpreter = elf_interpreter(&me).unwrap();
        assert!(
            interpreter
                .as_deref()
                .is_some_and(|p| p.starts_with('/') && p.contains("ld-")),
            "{interpreter:?}"
        );
        assert!(elf_interpreter(b"#!/bin/sh").is_err());
        assert!(elf_interpreter(&me[..40]).is_err());
    }

    /// Reads a tar back: (path, type flag, size, link, mode) per entry.
    fn entries(tar: &[u8]) -> Vec<(String, u8, usize, String, u32)> {
        let mut out = Vec::new();
        let mut at = 0;
        while at + 512 <= tar.len() && tar[at] != 0 {
            let header = &tar[at..at + 512];
            let text = |range: std::ops::Range<usize>| {
                String::from_utf8_lossy(&header[range])
                    .trim_end_matches('\0')
                    .to_string()
            };
            let octal = |range| u64::from_str_radix(text(range).trim(), 8).unwrap();
            let sum: u32 = header
                .iter()
                .enumerate()
                .map(|(i, b)| {
                    if (148..156).contains(&i) {
                        32
                    } else {
                        u32::from(*b)
                    }
                })
                .sum();
            assert_eq!(u64::from(sum), octal(148..155), "checksum");
            let prefix = text(345..500);
            let name = text(0..100);
            let path = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            let size = octal(124..136) as usize;
            out.push((
                path,
                header[156],
                size,
                text(157..257),
                octal(100..108) as u32,
            ));
            at += 512 + size.div_ceil(512) * 512;
        }
        out
    }

    fn inputs() -> RootfsInputs {
        let mut inputs = RootfsInputs {
            executable: b"\x7fELF-binary".to_vec(),
            executable_path: PROXY_BINARY.into(),
            ..RootfsInputs::default()
        };
        inputs
            .libraries
            .insert("/usr/lib/x86_64-linux-gnu/libc.so.6".into(), vec![1; 1000]);
        inputs.symlinks.insert(
            "/lib64/ld-linux-x86-64.so.2".into(),
            "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2".into(),
        );
        let deep = format!("/{}/libdeep.so", vec!["d".repeat(30); 5].join("/"));
        inputs.libraries.insert(deep, vec![2; 3]);
        inputs
    }

    #[test]
    fn the_rootfs_holds_the_binary_libraries_users_and_directories() {
        let tar = rootfs_tar(&inputs());
        assert_eq!(tar.len() % 512, 0);
        let listed = entries(&tar);
        let find = |path: &str| listed.iter().find(|e| e.0 == path).cloned();
        let binary = find("usr/local/bin/agentc").unwrap();
        assert_eq!((binary.1, binary.2, binary.4), (b'0', 11, 0o755));
        assert_eq!(find("usr/lib/x86_64-linux-gnu/libc.so.6").unwrap().2, 1000);
        let link = find("lib64/ld-linux-x86-64.so.2").unwrap();
        assert_eq!(link.1, b'2');
        assert_eq!(link.3, "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2");
        assert!(find(&format!("{}/libdeep.so", vec!["d".repeat(30); 5].join("/"))).is_some());
        assert_eq!(find("tmp/").unwrap().4, 0o1777);
        for dir in [
            "usr/",
            "usr/local/",
            "usr/local/bin/",
            "lib64/",
            "etc/",
            "proc/",
        ] {
            assert_eq!(find(dir).map(|e| e.1), Some(b'5'), "{dir}");
        }
        let passwd_at = tar
            .windows(PASSWD.len())
            .position(|w| w == PASSWD.as_bytes());
        assert!(passwd_at.is_some());
        assert!(PASSWD.contains("nobody:x:65534:65534"));
    }

    #[test]
    fn the_tar_and_the_tag_are_deterministic() {
        let changes = import_changes("egress-proxy", &[PROXY_BINARY], Some(&[PROXY_BINARY]));
        let a = rootfs_tar(&inputs());
        let b = rootfs_tar(&inputs());
        assert_eq!(a, b);
        let tag = image_tag(IMAGE_REPOSITORY, &a, &changes);
        assert_eq!(tag, image_tag(IMAGE_REPOSITORY, &b, &changes));
        let hex = tag.strip_prefix("agentc-egress:").unwrap();
        assert_eq!(hex.len(), 12);
        let mut other = inputs();
        other.executable.push(0);
        assert_ne!(
            tag,
            image_tag(IMAGE_REPOSITORY, &rootfs_tar(&other), &changes)
        );
        assert!(changes.contains(&"USER 65534:65534".to_string()));
    }
}
