//! Metadata paths: validation, parent and child helpers (ZooKeeper's path rules).

use crate::metadata::error::MetadataStoreError;

/// Checks that `path` is `/` or `/seg(/seg)*` with non-empty segments and no `.`/`..`
/// segments (ZooKeeper's rules).
pub(crate) fn validate(path: &str) -> Result<(), MetadataStoreError> {
    let invalid = |reason| {
        Err(MetadataStoreError::InvalidPath {
            path: path.to_owned(),
            reason,
        })
    };
    if !path.starts_with('/') {
        return invalid("a path starts with `/`");
    }
    if path == "/" {
        return Ok(());
    }
    if path.ends_with('/') {
        return invalid("a path other than `/` does not end with `/`");
    }
    for segment in path[1..].split('/') {
        if segment.is_empty() {
            return invalid("a path has no empty segment");
        }
        if segment == "." || segment == ".." {
            return invalid("a path has no `.` or `..` segment");
        }
        if segment.contains('\0') {
            return invalid("a path has no NUL character");
        }
    }
    Ok(())
}

/// The parent of a valid path other than `/`.
pub(crate) fn parent(path: &str) -> Option<&str> {
    if path == "/" {
        return None;
    }
    match path.rfind('/') {
        Some(0) => Some("/"),
        Some(index) => Some(&path[..index]),
        None => None,
    }
}

/// `parent/child` for a valid parent path and a child name.
pub(crate) fn child(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}

/// The ancestors of a valid path, outermost first, excluding `/` and the path itself:
/// `/a/b/c` gives `/a`, `/a/b`.
pub(crate) fn ancestors(path: &str) -> impl Iterator<Item = &str> {
    path.match_indices('/')
        .map(|(index, _)| index)
        .filter(|&index| index > 0)
        .map(move |index| &path[..index])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_paths_are_absolute_without_empty_or_dot_segments() {
        for path in ["/", "/a", "/a/b", "/loadbalance/brokers/b-1:8080"] {
            assert_eq!(validate(path), Ok(()), "{path}");
        }
        for path in ["", "a", "/a/", "//a", "/a//b", "/a/./b", "/.."] {
            assert!(validate(path).is_err(), "{path}");
        }
    }

    #[test]
    fn parent_child_and_ancestors_follow_the_segments() {
        assert_eq!(parent("/"), None);
        assert_eq!(parent("/a"), Some("/"));
        assert_eq!(parent("/a/b"), Some("/a"));
        assert_eq!(child("/", "a"), "/a");
        assert_eq!(child("/a", "b"), "/a/b");
        assert_eq!(ancestors("/a/b/c").collect::<Vec<_>>(), ["/a", "/a/b"]);
        assert_eq!(ancestors("/a").count(), 0);
    }
}
