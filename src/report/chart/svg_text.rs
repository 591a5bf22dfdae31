//! An SVG backend whose text is drawn as glyph outlines of the embedded font, so that an SVG
//! chart looks the same in any viewer, on a machine with no fonts at all.
//!
//! It wraps plotters' `SVGBackend` and forwards every shape to it; `draw_text` instead
//! records the glyphs, which [`TextLayer::finish`] appends as `<defs>` (each glyph's outline once, in
//! font units) and `<use>` elements. Text is placed like plotters places it in a bitmap
//! (same layout box, anchor and baseline), so the SVG and PNG of a chart agree.

use super::FONT;
use ab_glyph::{Font, FontRef, GlyphId, OutlineCurve};
use plotters::prelude::*;
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingErrorKind, FontTransform,
};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::OnceLock;

/// Glyphs and text runs collected while a chart is drawn.
#[derive(Default)]
pub struct TextLayer {
    /// Glyph id -> outline path in font units (y down).
    glyphs: BTreeMap<u16, String>,
    /// `<g>` elements, in drawing order.
    runs: String,
}

fn num(x: f32) -> String {
    let r = (x * 10.0).round() / 10.0;
    if r == 0.0 { "0".into() } else { format!("{r}") }
}

/// The embedded font, parsed once.
pub fn embedded_font() -> &'static FontRef<'static> {
    static PARSED: OnceLock<FontRef<'static>> = OnceLock::new();
    PARSED.get_or_init(|| {
        FontRef::try_from_slice(FONT).expect("the embedded font assets/fonts/DejaVuSans.ttf parses")
    })
}

/// Where a text's layout box starts relative to its anchor point, as plotters computes it
/// for bitmaps: `(dx, dy)` in the text's own (unrotated) frame.
pub fn anchor_offset<S: BackendTextStyle>(text: &str, style: &S) -> Result<(i32, i32), S::FontError> {
    let ((x0, y0), (x1, y1)) = style.layout_box(text)?;
    let (width, height) = (x1 - x0, y1 - y0);
    let dx = match style.anchor().h_pos {
        HPos::Left => 0,
        HPos::Right => -width,
        HPos::Center => -width / 2,
    };
    let dy = match style.anchor().v_pos {
        VPos::Top => 0,
        VPos::Center => -height / 2,
        VPos::Bottom => -height,
    };
    Ok((dx - x0, dy - y0))
}

fn outline_path(font: &FontRef<'static>, id: GlyphId) -> String {
    let Some(outline) = font.outline(id) else { return String::new() };
    let mut d = String::new();
    let mut at: Option<ab_glyph::Point> = None;
    let p = |q: ab_glyph::Point| format!("{} {}", num(q.x), num(-q.y));
    for curve in &outline.curves {
        let (start, end) = match curve {
            OutlineCurve::Line(a, b) => (*a, *b),
            OutlineCurve::Quad(a, _, c) => (*a, *c),
            OutlineCurve::Cubic(a, _, _, d) => (*a, *d),
        };
        if at != Some(start) {
            if at.is_some() {
                d.push('Z');
            }
            let _ = write!(d, "M{}", p(start));
        }
        match curve {
            OutlineCurve::Line(_, b) => {
                let _ = write!(d, "L{}", p(*b));
            }
            OutlineCurve::Quad(_, b, c) => {
                let _ = write!(d, "Q{} {}", p(*b), p(*c));
            }
            OutlineCurve::Cubic(_, b, c, e) => {
                let _ = write!(d, "C{} {} {}", p(*b), p(*c), p(*e));
            }
        }
        at = Some(end);
    }
    if at.is_some() {
        d.push('Z');
    }
    d
}

impl TextLayer {
    fn add(
        &mut self,
        text: &str,
        size: f64,
        color: BackendColor,
        pos: BackendCoord,
        dxy: (i32, i32),
        trans: FontTransform,
    ) {
        let font = embedded_font();
        let scale = size as f32 / font.height_unscaled();
        let rotate = match trans {
            FontTransform::None => 0,
            FontTransform::Rotate90 => 90,
            FontTransform::Rotate180 => 180,
            FontTransform::Rotate270 => 270,
        };
        let (r, g, b) = color.rgb;
        let mut uses = String::new();
        let mut pen = 0f32;
        let mut prev: Option<GlyphId> = None;
        for c in text.chars() {
            let id = font.glyph_id(c);
            if let Some(p) = prev {
                pen += font.kern_unscaled(p, id);
            }
            prev = Some(id);
            let path = self.glyphs.entry(id.0).or_insert_with(|| outline_path(font, id));
            if !path.is_empty() {
                let _ = write!(uses, "<use href=\"#@g{}\" x=\"{}\"/>", id.0, num(pen));
            }
            pen += font.h_advance_unscaled(id);
        }
        if uses.is_empty() {
            return;
        }
        // Baseline at half the size below the layout box's top, as plotters' bitmap text.
        let _ = writeln!(
            self.runs,
            "<g fill=\"#{r:02X}{g:02X}{b:02X}\"{} transform=\"translate({} {}){} translate({} {}) scale({})\">{uses}</g>",
            if color.alpha < 1.0 { format!(" fill-opacity=\"{}\"", color.alpha) } else { String::new() },
            pos.0,
            pos.1,
            if rotate == 0 { String::new() } else { format!(" rotate({rotate})") },
            dxy.0,
            num(dxy.1 as f32 + size as f32 / 2.0),
            scale,
        );
    }

    /// Inserts the glyph definitions and the text runs before the closing `</svg>`; glyph
    /// ids are prefixed with `id_prefix`, which must be unique in a page that inlines
    /// several charts.
    pub fn finish(self, svg: &mut String, id_prefix: &str) {
        let mut layer = String::from("<defs>\n");
        for (id, d) in &self.glyphs {
            if !d.is_empty() {
                let _ = writeln!(layer, "<path id=\"{id_prefix}g{id}\" d=\"{d}\"/>");
            }
        }
        layer.push_str("</defs>\n");
        layer.push_str(&self.runs.replace("href=\"#@g", &format!("href=\"#{id_prefix}g")));
        let at = svg.rfind("</svg>").unwrap_or(svg.len());
        svg.insert_str(at, &layer);
    }
}

/// plotters' SVG backend with text drawn by [`TextLayer`].
pub struct OutlinedSvg<'a, 'b> {
    inner: SVGBackend<'a>,
    text: &'b mut TextLayer,
}

impl<'a, 'b> OutlinedSvg<'a, 'b> {
    /// An SVG of `size` pixels written into `buf`, text collected into `text`.
    pub fn new(buf: &'a mut String, size: (u32, u32), text: &'b mut TextLayer) -> Self {
        OutlinedSvg { inner: SVGBackend::with_string(buf, size), text }
    }
}

type Err = <SVGBackend<'static> as DrawingBackend>::ErrorType;

impl DrawingBackend for OutlinedSvg<'_, '_> {
    type ErrorType = Err;

    delegate_to_inner!();
    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<Err>> {
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(());
        }
        let dxy = anchor_offset(text, style).map_err(|e| DrawingErrorKind::FontError(Box::new(e)))?;
        self.text.add(text, style.size(), color, pos, dxy, style.transform());
        Ok(())
    }
}
