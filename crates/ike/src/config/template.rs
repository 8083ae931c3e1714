//! Section references (`name : base[, base2] { }`), strongSwan 5.7+'s
//! section templates, resolved the way strongswan.conf(5) (REFERENCING
//! OTHER SECTIONS) and `settings.c` resolve them:
//!
//! - a reference is an absolute dotted name from the root
//!   (`connections.conn-a`, `conn-defaults`), wherever the section naming
//!   it is, and may name a section later in the file or in an included
//!   file;
//! - the section inherits every setting and subsection of the sections it
//!   names; its own settings and subsections come first and override (a
//!   subsection of the same name merges, its own keys winning); of
//!   several references, the left one wins and its settings come first;
//! - what a referenced section itself inherits (by its own references or
//!   its subsections') is inherited too;
//! - `key =` in the section clears an inherited value back to its default.
//!
//! flowsec refuses a reference to a section that does not exist and a
//! reference loop (strongSwan ignores the first and would recurse on the
//! second). A top-level section that is referenced and is not one of
//! swanctl.conf's own (`connections`, `secrets`, `pools`, `authorities`)
//! is a template: it is dropped once resolved, where any other unknown
//! top-level section stays an error.

use std::collections::{HashMap, HashSet};

use super::lexer::{join, Section};
use super::{ConfigError, ConfigErrorKind};

/// The top-level sections swanctl.conf reads (swanctl.opt).
const SWANCTL_SECTIONS: &[&str] = &["connections", "secrets", "pools", "authorities"];

/// `root` with every section's references resolved and template-only
/// top-level sections dropped; `file` names the main file for errors.
pub(crate) fn resolve(file: &str, root: Section) -> Result<Section, ConfigError> {
    if !has_refs(&root) {
        return Ok(root);
    }
    let mut r = Resolver {
        file,
        root: &root,
        open: Vec::new(),
        done: HashMap::new(),
        templates: HashSet::new(),
    };
    let mut out = r.section(&root, "")?;
    let templates = r.templates;
    out.sections
        .retain(|s| SWANCTL_SECTIONS.contains(&s.name.as_str()) || !templates.contains(&s.name));
    Ok(out)
}

fn has_refs(s: &Section) -> bool {
    !s.refs.is_empty() || s.sections.iter().any(has_refs)
}

struct Resolver<'a> {
    file: &'a str,
    /// The tree as read, where references are looked up.
    root: &'a Section,
    /// The paths being resolved, outermost first: a reference to one of
    /// them is a loop.
    open: Vec<String>,
    /// Sections resolved already, by path.
    done: HashMap<String, Section>,
    /// The top-level names references start with.
    templates: HashSet<String>,
}

impl Resolver<'_> {
    /// `sec` (at `path`) with its subsections and then its references
    /// resolved.
    fn section(&mut self, sec: &Section, path: &str) -> Result<Section, ConfigError> {
        if let Some(done) = self.done.get(path) {
            return Ok(done.clone());
        }
        self.open.push(path.to_string());
        let mut out = Section {
            refs: Vec::new(),
            sections: Vec::with_capacity(sec.sections.len()),
            ..sec.clone()
        };
        for sub in &sec.sections {
            let resolved = self.section(sub, &join(path, &sub.name))?;
            out.sections.push(resolved);
        }
        for name in &sec.refs {
            let err = |kind| {
                let o = sec.origin();
                ConfigError::new(o.file_or(self.file), o.line, path.to_string(), kind)
            };
            if self.open.iter().any(|p| p == name) {
                return Err(err(ConfigErrorKind::ReferenceLoop(name.clone())));
            }
            let Some(target) = find(self.root, name) else {
                return Err(err(ConfigErrorKind::UnknownReference(name.clone())));
            };
            let first = name.split('.').next().unwrap_or_default();
            self.templates.insert(first.to_string());
            let base = self.section(target, name)?;
            inherit(&mut out, &base);
        }
        self.open.pop();
        self.done.insert(path.to_string(), out.clone());
        Ok(out)
    }
}

/// The section at the absolute dotted `name`.
fn find<'a>(root: &'a Section, name: &str) -> Option<&'a Section> {
    name.split('.').try_fold(root, |sec, part| {
        sec.sections.iter().find(|s| s.name == part)
    })
}

/// `from`'s settings and subsections added to `own` after its own, which
/// win.
fn inherit(own: &mut Section, from: &Section) {
    for s in &from.settings {
        if !own.settings.iter().any(|o| o.key == s.key) {
            own.settings.push(s.clone());
        }
    }
    for sub in &from.sections {
        match own.sections.iter_mut().find(|o| o.name == sub.name) {
            Some(o) => inherit(o, sub),
            None => own.sections.push(sub.clone()),
        }
    }
}
