import streamlit as st
st.header("stub")
