//! BM25 over the same tools, with tantivy: the baseline `floorgate eval` and the benches report
//! beside the shipped rules (feature `bm25-baseline`, host only).
//!
//! Text goes through floorgate's own tokenizer first, so both rankers see the same tokens and
//! the comparison is about scoring, not splitting. No floor: BM25 returns its top k.

use super::ToolDoc;
use crate::tokenize::tokenize;
use tantivy::collector::TopDocs;
use tantivy::query::QueryParser;
use tantivy::schema::{Field, Schema, STORED, TEXT};
use tantivy::{doc, Index, IndexReader, TantivyDocument};

/// An in-memory tantivy index over a pool of tools.
pub struct Bm25Index {
    reader: IndexReader,
    parser: QueryParser,
    id: Field,
}

fn joined(text: &str) -> String {
    tokenize(text).join(" ")
}

impl Bm25Index {
    pub fn build(docs: &[ToolDoc]) -> tantivy::Result<Bm25Index> {
        let mut sb = Schema::builder();
        let name = sb.add_text_field("name", TEXT);
        let connector = sb.add_text_field("connector", TEXT);
        let description = sb.add_text_field("description", TEXT);
        let id = sb.add_u64_field("id", STORED);
        let index = Index::create_in_ram(sb.build());
        let mut w = index.writer_with_num_threads(1, 15_000_000)?;
        for (i, d) in docs.iter().enumerate() {
            w.add_document(doc!(
                name => joined(&d.name),
                connector => joined(&d.connector),
                description => joined(&d.description),
                id => i as u64,
            ))?;
        }
        w.commit()?;
        let reader = index.reader()?;
        let parser = QueryParser::for_index(&index, vec![name, connector, description]);
        Ok(Bm25Index { reader, parser, id })
    }

    /// Positions (in the build order) of the top `k` tools.
    pub fn search(&self, query: &str, k: usize) -> Vec<usize> {
        let q = joined(query);
        if q.is_empty() {
            return Vec::new();
        }
        let (query, _) = self.parser.parse_query_lenient(&q);
        let searcher = self.reader.searcher();
        let Ok(top) = searcher.search(&query, &TopDocs::with_limit(k).order_by_score()) else {
            return Vec::new();
        };
        top.into_iter()
            .filter_map(|(_, addr)| {
                let d: TantivyDocument = searcher.doc(addr).ok()?;
                use tantivy::schema::Value;
                d.get_first(self.id)
                    .and_then(|v| v.as_u64())
                    .map(|v| v as usize)
            })
            .collect()
    }
}
