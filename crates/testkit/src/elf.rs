//! Hand-made ELF programs for tests that need a binary no toolchain here
//! builds.

/// A complete, static 32-bit i386 program (elf(5) layouts): one `PT_LOAD`
/// segment whose code is `exit(7)` through `int 0x80` (the i386 system
/// call gate; `__NR_exit` is 1 in arch/x86/entry/syscalls/syscall_32.tbl).
/// An x86-64 kernel runs it with IA-32 emulation; the 64-bit shim cannot
/// be preloaded into it.
pub fn i386_exit7() -> Vec<u8> {
    let base: u32 = 0x0804_8000;
    let code = [0xB8, 1, 0, 0, 0, 0xBB, 7, 0, 0, 0, 0xCD, 0x80];
    let (eh, ph) = (52u32, 32u32);
    let total = eh + ph + code.len() as u32;
    let mut f = b"\x7fELF\x01\x01\x01".to_vec();
    f.resize(16, 0);
    for half in [2u16, 3] {
        f.extend_from_slice(&half.to_le_bytes()); // e_type ET_EXEC, e_machine EM_386
    }
    for word in [1u32, base + eh + ph, eh, 0, 0] {
        f.extend_from_slice(&word.to_le_bytes()); // version, entry, phoff, shoff, flags
    }
    for half in [eh as u16, ph as u16, 1, 0, 0, 0] {
        f.extend_from_slice(&half.to_le_bytes()); // ehsize, phentsize, phnum, sh*
    }
    // PT_LOAD, offset 0, vaddr, paddr, filesz, memsz, R+X, align
    for word in [1u32, 0, base, base, total, total, 5, 0x1000] {
        f.extend_from_slice(&word.to_le_bytes());
    }
    f.extend_from_slice(&code);
    f
}

/// Writes [`i386_exit7`] as an executable file `name` in `dir`.
pub fn write_i386_exit7(dir: &std::path::Path, name: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    std::fs::write(&p, i386_exit7()).expect("write the i386 program");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755))
        .expect("make the i386 program executable");
    p
}
