//! The systems under evaluation: the shipped rankers (v2, v1 and its ablations), the literal
//! SPEC rules and the BM25 baseline, behind one trait so every set measures them alike.

use super::loading::Catalog;
#[cfg(feature = "bm25-baseline")]
use floorgate::rank::ToolDoc;
use floorgate::rank::{Directory, Index, Limit, Rules, SearchRequest, Subset};

/// A ranker under evaluation: top results (name, connector) for a query over a pool.
pub trait Ranker {
    fn label(&self) -> String;
    fn rank(&self, query: &str, pool: &[u32]) -> Vec<(String, String)>;
    /// The baseline the summary's `vs_bm25` divides by (at most one system).
    fn baseline(&self) -> bool {
        false
    }
}

/// Every system the evaluation reports, in the order its rows print. Adding a ranker is one
/// line here.
pub fn systems(cat: &Catalog) -> Vec<Box<dyn Ranker + '_>> {
    vec![
        Box::new(Ours::new("shipped", cat, Rules::SHIPPED, true)),
        Box::new(Ours::new(
            "shipped, no directory",
            cat,
            Rules::SHIPPED,
            false,
        )),
        Box::new(Ours::new("literal SPEC §7", cat, Rules::LITERAL, false)),
        Box::new(V2::new(
            "v2",
            cat,
            floorgate::rank::v2::Rules::SHIPPED,
            true,
        )),
        #[cfg(feature = "bm25-baseline")]
        Box::new(Bm25 { cat }),
    ]
}

pub struct Ours {
    pub label: String,
    pub index: Index,
    pub directory: Option<Directory>,
}

impl Ours {
    pub fn new(label: &str, cat: &Catalog, rules: Rules, with_directory: bool) -> Ours {
        Ours {
            label: label.to_owned(),
            index: Index::with_rules(cat.docs.clone(), rules),
            directory: with_directory.then(|| Directory::with_rules(cat.docs.clone(), rules)),
        }
    }
}

impl Ranker for Ours {
    fn label(&self) -> String {
        self.label.clone()
    }
    fn rank(&self, query: &str, pool: &[u32]) -> Vec<(String, String)> {
        let sub = Subset::from_ids(&self.index, pool.iter().copied());
        let req = SearchRequest {
            query,
            limit: Limit::DEFAULT,
            explain: false,
            directory: self.directory.as_ref(),
        };
        self.index
            .search(&req, &sub)
            .results
            .into_iter()
            .map(|r| (r.name.to_string(), r.connector.to_string()))
            .collect()
    }
}

/// The v2 pipeline (`floorgate::rank::v2`) with a set of its rules. v2's rules are chosen per
/// query, so every variant shares one index and one directory.
pub struct V2 {
    pub label: String,
    pub index: std::rc::Rc<floorgate::rank::v2::Index>,
    pub directory: Option<std::rc::Rc<floorgate::rank::v2::Directory>>,
    pub rules: floorgate::rank::v2::Rules,
}

impl V2 {
    pub fn new(label: &str, cat: &Catalog, rules: floorgate::rank::v2::Rules, dir: bool) -> V2 {
        use floorgate::rank::v2;
        V2 {
            label: label.to_owned(),
            index: v2::Index::build(cat.docs.clone()).into(),
            directory: dir.then(|| v2::Directory::build(cat.docs.clone()).into()),
            rules,
        }
    }

    /// The same index and directory under other rules.
    pub fn variant(&self, label: &str, rules: floorgate::rank::v2::Rules) -> V2 {
        V2 {
            label: label.to_owned(),
            index: self.index.clone(),
            directory: self.directory.clone(),
            rules,
        }
    }
}

impl Ranker for V2 {
    fn label(&self) -> String {
        self.label.clone()
    }
    fn rank(&self, query: &str, pool: &[u32]) -> Vec<(String, String)> {
        use floorgate::rank::v2;
        let visible = v2::Visible::from_ids(&self.index, pool.iter().copied());
        let req = v2::Request {
            directory: self.directory.as_deref(),
            rules: self.rules,
            ..v2::Request::new(query)
        };
        v2::search(&self.index, &visible, &req)
            .results
            .into_iter()
            .map(|r| (r.name.to_string(), r.connector.to_string()))
            .collect()
    }
}

#[cfg(feature = "bm25-baseline")]
pub struct Bm25<'a> {
    pub cat: &'a Catalog,
}

#[cfg(feature = "bm25-baseline")]
impl Ranker for Bm25<'_> {
    fn label(&self) -> String {
        "bm25 (tantivy)".into()
    }
    fn baseline(&self) -> bool {
        true
    }
    fn rank(&self, query: &str, pool: &[u32]) -> Vec<(String, String)> {
        let docs: Vec<ToolDoc> = pool
            .iter()
            .map(|&i| self.cat.docs[i as usize].clone())
            .collect();
        let ix = floorgate::rank::bm25::Bm25Index::build(&docs).expect("tantivy index");
        ix.search(query, 5)
            .into_iter()
            .map(|i| (docs[i].name.to_string(), docs[i].connector.to_string()))
            .collect()
    }
}
