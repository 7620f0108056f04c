//! Deciding from the waves (`W`) and access requests (`A`) overlays: the thing selected
//! (a wave's sign-off, one of its repoints, a request's review or its grant) and what
//! approving, rejecting or rolling it back is bound to: the hash the CLI binds the same
//! decision to. The reason box is the incident screen's, showing that hash; what the
//! engine would refuse for the state shown is said before it opens, and the engine
//! checks everything again.

use ratatui::text::Span;

use crate::console::action::{self, step, Action};
use crate::console::overlays::reason::{self, Decision};
use crate::console::overlays::{access, waves, Scroll};
use crate::console::state::{App, Overlay};
use crate::console::theme::Theme;

/// One thing in these overlays a decision is taken on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decidable {
    /// What the command names: `MIG-<m>-<w>`, a repoint, `ACC-n` or its grant's proposal.
    pub id: String,
    /// What the reason box says it is.
    pub title: String,
    /// What approving or rejecting it binds to (the parity hash of a wave's sign-off,
    /// a repoint's or a grant's content hash, a review's hash).
    pub hash: Option<String>,
    /// Why it cannot be approved or rejected as it stands, if it cannot.
    pub not_decided: Option<String>,
    /// Why it cannot be rolled back as it stands, if it cannot.
    pub not_rolled_back: Option<String>,
}

/// The overlay's lines and, in order, the line each decidable thing starts on.
pub struct Listing<'a> {
    pub lines: Vec<ratatui::text::Line<'a>>,
    pub starts: Vec<usize>,
}

/// The selection mark before a decidable thing's first line.
pub fn mark(app: &App, at: usize, theme: &Theme) -> Span<'static> {
    let selected = match &app.overlay {
        Overlay::Waves(scroll) | Overlay::Access(scroll) => scroll.selected == at,
        _ => false,
    };
    match selected {
        true => Span::styled("▶ ", theme.accent),
        false => Span::raw("  "),
    }
}

/// Every decidable thing of both overlays, waves first, in the order they are listed.
pub fn all(app: &App) -> Vec<Decidable> {
    let mut found = waves::decidables(app);
    found.extend(access::decidables(app));
    found
}

/// The decidable thing `id` names, in either overlay.
pub fn find(app: &App, id: &str) -> Option<Decidable> {
    all(app).into_iter().find(|d| d.id == id)
}

/// The open overlay's decidable things and its listing.
fn open_listing(app: &App) -> Option<(Vec<Decidable>, Listing<'static>)> {
    match app.overlay {
        Overlay::Waves(_) => Some((waves::decidables(app), waves::listing(app))),
        Overlay::Access(_) => Some((access::decidables(app), access::listing(app))),
        _ => None,
    }
}

/// Whether a deciding key lands here rather than on the incident screen.
pub fn is_open(app: &App) -> bool {
    matches!(app.overlay, Overlay::Waves(_) | Overlay::Access(_))
}

/// The moving keys: the selection moves, and the overlay scrolls to keep it in sight.
/// False for any other action, or another overlay.
pub fn handle_moves(app: &mut App, action: &Action) -> bool {
    let Some((_, listing)) = open_listing(app) else {
        return false;
    };
    let height = app.drawn.scrolled.get().height as usize;
    let Some(delta) = action.distance(action::page(app.drawn.scrolled.get())) else {
        return false;
    };
    let (Overlay::Waves(scroll) | Overlay::Access(scroll)) = &mut app.overlay else {
        return false;
    };
    if listing.starts.is_empty() {
        // Nothing to select: the keys scroll what is there.
        scroll.scroll = step(scroll.scroll, delta, listing.lines.len());
        return true;
    }
    scroll.selected = step(scroll.selected, delta, listing.starts.len());
    follow(scroll, &listing, height);
    true
}

/// Scrolls so the selected thing's first line is in sight (the top at the first).
fn follow(scroll: &mut Scroll, listing: &Listing, height: usize) {
    let line = listing.starts.get(scroll.selected).copied().unwrap_or(0);
    if scroll.selected == 0 || line < scroll.scroll {
        scroll.scroll = if scroll.selected == 0 { 0 } else { line };
    } else if height > 0 && line >= scroll.scroll + height {
        scroll.scroll = line + 1 - height;
    }
}

/// The selected thing of the open overlay.
fn selected(app: &App) -> Option<Decidable> {
    let (found, _) = open_listing(app)?;
    let (Overlay::Waves(scroll) | Overlay::Access(scroll)) = &app.overlay else {
        return None;
    };
    found.into_iter().nth(scroll.selected)
}

/// Why `decision` cannot be asked of the selected thing as it stands, if it cannot
/// (the footer offers only the keys that would ask).
pub fn refused(app: &App, decision: Decision) -> Option<String> {
    let Some(thing) = selected(app) else {
        return Some("nothing here to decide".into());
    };
    let refused = match decision {
        Decision::RollBack => thing.not_rolled_back,
        _ => thing.not_decided,
    };
    refused.or_else(|| {
        (decision != Decision::RollBack && thing.hash.is_none()).then(|| {
            format!(
                "{}: the engine sent no hash to bind a decision to (an older engine?)",
                thing.id
            )
        })
    })
}

/// `a`, `r` or `u` on the selected thing: the reason box for it, bound to its hash, or
/// why not. Esc in the box, or sending, comes back to this overlay.
pub fn start(app: &mut App, decision: Decision) {
    if app.read_only {
        app.message = Some("read-only console: decisions are disabled".into());
        return;
    }
    if let Some(why) = refused(app, decision) {
        app.message = Some(why);
        return;
    }
    let Some(thing) = selected(app) else {
        return;
    };
    let back = app.overlay.clone();
    reason::open(app, decision, thing.id, thing.title, thing.hash);
    reason::come_back_to(app, back);
}
