//! What a device personality keeps beside each engine object, in the same
//! table entry: one table per object. The engine knows nothing of mlx5 byte
//! layouts; mlx5 stores its context of a QP (the qpc, buffer pages, doorbell
//! record), CQ, SRQ and mkey in the engine's entry for that object instead of
//! a second table kept in step by hand.

use std::ops::{Deref, DerefMut};

use crate::table::Table;

/// The per-object context types of a personality (`()` for none).
pub trait Personality: 'static {
    type Qp: Default + Send;
    type Cq: Default + Send;
    type Srq: Default + Send;
    type Mkey: Default + Send;
}

/// The engine alone (its own tests, benches): no context.
impl Personality for () {
    type Qp = ();
    type Cq = ();
    type Srq = ();
    type Mkey = ();
}

/// One table entry: the engine's object (reached through `Deref`) and the
/// personality's context of it (`ext`).
#[derive(Debug, Clone, Default)]
pub struct Slot<O, X> {
    obj: O,
    pub ext: X,
}

impl<O, X: Default> Slot<O, X> {
    /// A new object with an empty context (the personality fills it in).
    pub fn new(obj: O) -> Slot<O, X> {
        Slot { obj, ext: X::default() }
    }
}

impl<O, X> Slot<O, X> {
    /// An object with its context.
    pub fn with(obj: O, ext: X) -> Slot<O, X> {
        Slot { obj, ext }
    }

    /// The object.
    pub fn obj(&self) -> &O {
        &self.obj
    }

    /// The object and the context, both writable at once.
    pub fn parts_mut(&mut self) -> (&mut O, &mut X) {
        (&mut self.obj, &mut self.ext)
    }
}

impl<O, X> Slot<O, X> {
    /// The object, writable (a plain `&mut O`, so its fields borrow apart).
    pub fn obj_mut(&mut self) -> &mut O {
        &mut self.obj
    }
}

/// Lookups of the object alone, for the engine's own code.
impl<O, X> Table<Slot<O, X>> {
    pub fn obj(&self, n: u32) -> Option<&O> {
        self.get(n).map(Slot::obj)
    }

    pub fn obj_mut(&mut self, n: u32) -> Option<&mut O> {
        self.get_mut(n).map(Slot::obj_mut)
    }
}

impl<O, X> Deref for Slot<O, X> {
    type Target = O;
    fn deref(&self) -> &O {
        &self.obj
    }
}

impl<O, X> DerefMut for Slot<O, X> {
    fn deref_mut(&mut self) -> &mut O {
        &mut self.obj
    }
}
